// Encode and decode throughput of each wire encoding for a 25.6M-float gradient (one
// segment, uniformly random indices) at densities 0.001 and 0.01 (dense_f32 carries the
// same gradient as a dense segment, zeros included), against memcpy of the
// same number of bytes measured in the same run. Encoder and decoder reuse their output
// buffers across iterations, as a sender and a receiver of a steady stream do. Counters: msg_bytes (encoded message),
// B_per_nnz, and x_memcpy = time per message / time to memcpy the message (1.0 = as
// fast as copying the bytes; the loop is timed with a steady clock next to the
// library's own timing). Each benchmark checks that its message decodes back to the
// gradient before it times anything.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "core/wire/wire.h"

namespace sparseps {
namespace {

constexpr uint32_t kNumel = 25600000;

// The sparse gradient at density, built once per density (uniform distinct indices).
const SegmentData& gradient(double density) {
  static std::map<double, SegmentData> cache;
  auto it = cache.find(density);
  if (it != cache.end()) return it->second;
  std::mt19937_64 rng(42);
  const size_t k = topkCount(kNumel, density);
  std::uniform_int_distribution<uint32_t> index(0, kNumel - 1);
  std::vector<uint32_t> indices;
  while (indices.size() < k) {
    while (indices.size() < k + k / 16) indices.push_back(index(rng));
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  }
  std::shuffle(indices.begin(), indices.end(), rng);
  indices.resize(k);
  std::sort(indices.begin(), indices.end());
  SegmentData s;
  s.numel = kNumel;
  s.indices = std::move(indices);
  std::normal_distribution<float> value(0.0f, 1e-2f);
  s.values.resize(k);
  for (float& v : s.values) v = value(rng);
  return cache.emplace(density, std::move(s)).first->second;
}

// What travels in encoding e: the sparse gradient, or for kDenseF32 its dense form.
std::vector<SegmentData> messageFor(const SegmentData& s, Encoding e) {
  if (e != Encoding::kDenseF32) return {s};
  SegmentData dense;
  dense.numel = s.numel;
  dense.dense = true;
  dense.values.assign(s.numel, 0.0f);
  for (size_t i = 0; i < s.indices.size(); ++i) dense.values[s.indices[i]] = s.values[i];
  return {dense};
}

EncodeOptions optionsFor(Encoding e) {
  EncodeOptions options;
  options.allowF16(true);
  if (e != Encoding::kDenseF32) options.force(e);
  return options;
}

std::vector<uint8_t> encodeOrDie(const SegmentData& s, Encoding e) {
  absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(MessageHeader{}, messageFor(s, e), optionsFor(e));
  if (!m.ok()) {
    std::fprintf(stderr, "encode failed: %s\n", std::string(m.status().message()).c_str());
    std::abort();
  }
  return *std::move(m);
}

// Decodes m and checks it against s (f16 values within half precision); aborts if wrong.
void verifyOrDie(const std::vector<uint8_t>& m, const SegmentData& s, Encoding e) {
  absl::StatusOr<DecodedMessage> d = decodeMessage(m, DecodeLimits().allow(0, kNumel));
  bool good = d.ok() && d->segments.size() == 1;
  if (good) {
    const SegmentData& got = d->segments[0];
    if (e == Encoding::kDenseF32) {
      std::vector<float> want(kNumel, 0.0f);
      for (size_t i = 0; i < s.indices.size(); ++i) want[s.indices[i]] = s.values[i];
      good = got.dense && got.values == want;
    } else {
      good = got.indices == s.indices && got.values.size() == s.values.size();
      for (size_t i = 0; good && i < s.values.size(); ++i) {
        const float tolerance = e == Encoding::kDeltaVarintF16
                                    ? std::max(std::fabs(s.values[i]) * 0x1p-11f, 0x1p-25f)
                                    : 0.0f;
        good = std::fabs(got.values[i] - s.values[i]) <= tolerance;
      }
    }
  }
  if (!good) {
    std::fprintf(stderr, "%s: decoded message differs from the gradient (%s)\n", encodingName(e),
                 d.ok() ? "values" : std::string(d.status().message()).c_str());
    std::abort();
  }
}

// Seconds to memcpy bytes (best of several warm runs).
double memcpySeconds(size_t bytes) {
  std::vector<uint8_t> from(bytes, 1), to(bytes, 0);
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

void setCounters(benchmark::State& state, const SegmentData& s, size_t message_bytes,
                 double loop_seconds) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * message_bytes));
  state.counters["msg_bytes"] = static_cast<double>(message_bytes);
  state.counters["B_per_nnz"] = static_cast<double>(message_bytes) / static_cast<double>(s.nonzeros());
  const double per_message = loop_seconds / static_cast<double>(state.iterations());
  state.counters["x_memcpy"] = per_message / memcpySeconds(message_bytes);
}

void BM_Encode(benchmark::State& state, Encoding e, double density) {
  const SegmentData& s = gradient(density);
  const std::vector<uint8_t> reference = encodeOrDie(s, e);
  verifyOrDie(reference, s, e);
  const std::vector<SegmentData> segments = messageFor(s, e);
  const EncodeOptions options = optionsFor(e);
  std::vector<uint8_t> out;  // the sender's buffer, reused as a sender would
  if (!encodeMessage(MessageHeader{}, segments, options, &out).ok()) std::abort();  // warm-up
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (!encodeMessage(MessageHeader{}, segments, options, &out).ok()) std::abort();
    benchmark::DoNotOptimize(out.data());
  }
  const std::chrono::duration<double> loop = std::chrono::steady_clock::now() - start;
  setCounters(state, s, reference.size(), loop.count());
}

void BM_Decode(benchmark::State& state, Encoding e, double density) {
  const SegmentData& s = gradient(density);
  const std::vector<uint8_t> message = encodeOrDie(s, e);
  verifyOrDie(message, s, e);
  const DecodeLimits limits = DecodeLimits().allow(0, kNumel);
  std::vector<SegmentData> out;  // the receiver's segments, reused as a receiver would
  const auto decode = [&] {
    absl::StatusOr<MessageHeader> header = decodeHeader(message);
    const auto payload = absl::MakeConstSpan(message).subspan(kHeaderBytes);
    if (!header.ok() || !decodePayload(*header, payload, limits, &out).ok()) std::abort();
  };
  decode();  // warm-up: the first decode sizes the receiver's buffers
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    decode();
    benchmark::DoNotOptimize(out.data());
  }
  const std::chrono::duration<double> loop = std::chrono::steady_clock::now() - start;
  setCounters(state, s, message.size(), loop.count());
}

// The baseline on its own: copying the dense gradient (what sending it uncompressed costs).
void BM_MemcpyDenseGradient(benchmark::State& state) {
  std::vector<float> from(kNumel, 1.0f), to(kNumel, 0.0f);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), from.size() * sizeof(float));
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  if (to != from) std::abort();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * from.size() * sizeof(float)));
}

void registerAll() {
  for (double density : {0.001, 0.01}) {
    for (Encoding e : kFloatEncodings) {
      const std::string suffix = std::string(encodingName(e)) + "/density:" + (density == 0.001 ? "0.001" : "0.01");
      benchmark::RegisterBenchmark(("BM_Encode/" + suffix).c_str(), BM_Encode, e, density)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("BM_Decode/" + suffix).c_str(), BM_Decode, e, density)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  benchmark::RegisterBenchmark("BM_MemcpyDenseGradient", BM_MemcpyDenseGradient)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

const bool kRegistered = (registerAll(), true);

}  // namespace
}  // namespace sparseps

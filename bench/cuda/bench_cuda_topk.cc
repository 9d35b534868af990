// The device kernels of compressors/cuda on one segment of n normal floats, each against a
// device read pass of the same data (read_pass.h) in the same run:
//  - selection: the radix top-k, its sort-based baseline (cub::DeviceRadixSort), the radix
//    top-k's histogram passes alone, DGC's sampled threshold and the threshold filter (at
//    the k-th magnitude, so it keeps k: one stable compaction of n);
//  - around it: applying the k selected values (scatter-add) and packing them as the wire
//    format's index/value pairs;
//  - a step's selection over ResNet-50's segments: all at once (SegmentedTopk, and DGC's
//    sampled threshold) against a call once per segment.
// n: 1M, ResNet-50's 25.6M parameters and 100M; density 1% and 0.1% (args: n, 1/density).
// Every benchmark first checks its result against the CPU kernel (which also warms up),
// then times iterations with CUDA events (manual time: the stream's time, launches
// included). items_per_second counts the elements each kernel handles: n for the read pass
// and the selections, k for apply and pack. SPARSEPS_BENCH_DUMP=DIR writes each input as
// DIR/normal_<n>.f32 (raw little-endian floats) for bench/cuda/torch_topk.py, so torch.topk
// is timed on the same data. Without a CUDA device every benchmark is skipped, saying so
// (an error where SPARSEPS_REQUIRE_GPU=1).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_data.h"
#include "bench/cuda/read_pass.h"
#include "compressors/apply.h"
#include "compressors/cuda/device_presence.h"
#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/launchers.h"
#include "compressors/cuda/sparse_ops_cuda.h"
#include "compressors/cuda/threshold_cuda.h"
#include "compressors/cuda/topk_cuda.h"
#include "compressors/segment_spec.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"

namespace sparseps::gpu {
namespace {

// A device array that frees itself; empty when the allocation failed.
template <typename T>
struct DeviceArray {
  T* ptr = nullptr;
  explicit DeviceArray(size_t n) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr), (n == 0 ? 1 : n) * sizeof(T)) != cudaSuccess) {
      ptr = nullptr;
    }
  }
  DeviceArray(const T* host, size_t n) : DeviceArray(n) {
    if (ptr != nullptr &&
        cudaMemcpy(ptr, host, n * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess) {
      cudaFree(ptr);
      ptr = nullptr;
    }
  }
  ~DeviceArray() { cudaFree(ptr); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  std::vector<T> toHost(size_t n) const {
    std::vector<T> host(n);
    if (cudaMemcpy(host.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess) {
      host.clear();
    }
    return host;
  }
};

// One segment of n standard normal floats (seed 42), on the host and on the device, made
// once per n and kept for the whole run.
struct Input {
  std::vector<float> host;
  std::unique_ptr<DeviceArray<float>> device;
};

void dumpForTorch(const std::vector<float>& host) {
  const char* dir = std::getenv("SPARSEPS_BENCH_DUMP");
  if (dir == nullptr || *dir == '\0') return;
  const std::string path = absl::StrCat(dir, "/normal_", host.size(), ".f32");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  const bool ok =
      f != nullptr && std::fwrite(host.data(), sizeof(float), host.size(), f) == host.size();
  if (f != nullptr) std::fclose(f);
  if (!ok) std::fprintf(stderr, "bench_cuda_topk: could not write %s\n", path.c_str());
}

const Input* inputOf(size_t n) {
  static std::map<size_t, Input> inputs;
  auto [it, fresh] = inputs.try_emplace(n);
  Input& in = it->second;
  if (fresh) {
    in.host.resize(n);
    std::mt19937_64 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : in.host) v = normal(rng);
    in.device = std::make_unique<DeviceArray<float>>(in.host.data(), n);
    dumpForTorch(in.host);
  }
  return in.device->ptr == nullptr ? nullptr : &in;
}

// The CPU top-k of (n, k), the reference most checks compare with; made once per case.
const SegmentData& cpuTopk(size_t n, size_t k) {
  static std::map<std::pair<size_t, size_t>, SegmentData> results;
  auto [it, fresh] = results.try_emplace({n, k});
  if (fresh) {
    it->second.numel = static_cast<uint32_t>(n);
    topkExact(inputOf(n)->host, k, &it->second.indices, &it->second.values);
  }
  return it->second;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// What every benchmark shares: the device check, its input, the timing loop.
class DeviceCase {
 public:
  // n = range(0); with `selects`, k from the density 1 / range(1).
  DeviceCase(benchmark::State& state, bool selects)
      : DeviceCase(state, state.range(0),
                   selects ? topkCount(static_cast<size_t>(state.range(0)),
                                       1.0 / static_cast<double>(state.range(1)))
                           : 0) {}
  // The input of n floats; k: what the counters name as selected.
  DeviceCase(benchmark::State& state, int64_t n, size_t k) : state_(state) {
    n_ = static_cast<size_t>(n);
    k_ = k;
    if (!cudaDevicePresent()) {
      fail(cudaDeviceRequired() ? "SPARSEPS_REQUIRE_GPU=1 but " + cudaDeviceAbsence()
                                : "no CUDA device present: nothing measured");
      return;
    }
    input_ = inputOf(n_);
    if (input_ == nullptr) fail("could not allocate or copy the input on the device");
  }
  bool ok() const { return ok_; }
  size_t n() const { return n_; }
  size_t k() const { return k_; }
  const float* x() const { return input_->device->ptr; }
  const std::vector<float>& host() const { return input_->host; }
  const Input* input() const { return input_; }

  void fail(const std::string& why) {
    if (ok_) state_.SkipWithError(why.c_str());
    ok_ = false;
  }
  // A CUDA call of the setup or the check; false (and the benchmark skipped) on failure.
  bool check(cudaError_t err, const char* what) {
    if (err != cudaSuccess) fail(absl::StrCat(what, ": ", cudaGetErrorString(err)));
    return ok_;
  }

  // Times `launch` (which enqueues on the default stream) with events around each call.
  // `elements`: what items_per_second counts per call.
  void time(const std::function<bool()>& launch, size_t elements) {
    if (!ok_) return;
    cudaEvent_t start{}, stop{};
    if (!check(cudaEventCreate(&start), "event") || !check(cudaEventCreate(&stop), "event")) return;
    for (auto _ : state_) {
      cudaEventRecord(start, nullptr);
      const bool launched = launch();
      cudaEventRecord(stop, nullptr);
      if (!launched || !check(cudaEventSynchronize(stop), "kernel")) {
        fail("the kernel failed while timing");
        break;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      state_.SetIterationTime(ms / 1e3);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    state_.SetItemsProcessed(static_cast<int64_t>(state_.iterations() * elements));
    state_.counters["n"] = static_cast<double>(n_);
    if (k_ > 0) state_.counters["k"] = static_cast<double>(k_);
  }

 private:
  benchmark::State& state_;
  size_t n_ = 0;
  size_t k_ = 0;
  const Input* input_ = nullptr;
  bool ok_ = true;
};

void BM_ReadPass(benchmark::State& state) {
  DeviceCase c(state, /*selects=*/false);
  if (!c.ok()) return;
  DeviceArray<float> out(1);
  DeviceScratch scratch;
  std::vector<float> got;
  if (!c.check(readPassDevice(c.x(), c.n(), out.ptr, &scratch, nullptr), "read pass")) return;
  got = out.toHost(1);
  float want = c.host()[0];
  for (float v : c.host()) want = v > want ? v : want;
  if (got.size() != 1 || got[0] != want)
    return c.fail("read pass: the maximum differs from the CPU's");
  c.time([&] { return readPassDevice(c.x(), c.n(), out.ptr, &scratch, nullptr) == cudaSuccess; },
         c.n());
}

using TopkFn = absl::StatusOr<size_t> (*)(const float*, size_t, size_t, uint32_t*, float*,
                                          DeviceScratch*, cudaStream_t);

void runTopk(benchmark::State& state, TopkFn topk) {
  DeviceCase c(state, /*selects=*/true);
  if (!c.ok()) return;
  DeviceArray<uint32_t> indices(c.k());
  DeviceArray<float> values(c.k());
  DeviceScratch scratch;
  absl::StatusOr<size_t> r = topk(c.x(), c.n(), c.k(), indices.ptr, values.ptr, &scratch, nullptr);
  if (!r.ok()) return c.fail(r.status().ToString());
  if (!c.check(cudaDeviceSynchronize(), "top-k")) return;
  const SegmentData& want = cpuTopk(c.n(), c.k());
  if (indices.toHost(c.k()) != want.indices || !sameBits(values.toHost(c.k()), want.values)) {
    return c.fail("device top-k differs from topkExact");
  }
  c.time([&] { return topk(c.x(), c.n(), c.k(), indices.ptr, values.ptr, &scratch, nullptr).ok(); },
         c.n());
}

void BM_TopkRadix(benchmark::State& state) { runTopk(state, &topkRadixDevice); }
void BM_TopkSort(benchmark::State& state) { runTopk(state, &topkSortDevice); }

// Three histogram passes over all of x (launchRadixPasses, what DGC's sampled threshold runs
// on its sample): what the radix top-k would cost reading x in every pass, where
// BM_TopkRadix reads it in passes 0 and 1 only. Checked: the k-th largest key they find
// is the CPU top-k's smallest.
void BM_RadixPasses(benchmark::State& state) {
  DeviceCase c(state, /*selects=*/true);
  if (!c.ok()) return;
  DeviceArray<RadixState> radix(1);
  DeviceArray<uint32_t> hist(kBuckets);
  const auto n = static_cast<uint32_t>(c.n()), k = static_cast<uint32_t>(c.k());
  if (!c.check(launchRadixPasses(c.x(), n, k, radix.ptr, hist.ptr, nullptr), "radix passes") ||
      !c.check(cudaDeviceSynchronize(), "radix passes")) {
    return;
  }
  RadixState got{};
  if (!c.check(cudaMemcpy(&got, radix.ptr, sizeof got, cudaMemcpyDeviceToHost), "copy back"))
    return;
  uint32_t want = magnitudeKey(cpuTopk(c.n(), c.k()).values[0]);
  for (float v : cpuTopk(c.n(), c.k()).values) want = std::min(want, magnitudeKey(v));
  if (got.prefix != want) return c.fail("the radix passes' k-th key differs from the CPU top-k's");
  c.time(
      [&] { return launchRadixPasses(c.x(), n, k, radix.ptr, hist.ptr, nullptr) == cudaSuccess; },
      c.n());
}

// DGC's sampled threshold with a fixed sample start (SegmentedSampledThreshold, one
// segment): it waits for the device twice, for the sample's threshold and for the rounds'
// counts.
void BM_TopkSampled(benchmark::State& state) {
  DeviceCase c(state, /*selects=*/true);
  if (!c.ok()) return;
  const double density = 1.0 / static_cast<double>(state.range(1));
  const std::vector<SampledRequest> one = {{0, static_cast<uint64_t>(c.n()), density, 0x5eed}};
  DeviceArray<uint32_t> indices(c.k());
  DeviceArray<float> values(c.k());
  SegmentedSampledThreshold sampled;
  std::vector<uint32_t> wantIdx;
  std::vector<float> wantVal;
  sampledThreshold(c.host(), density, one[0].random_bits, &wantIdx, &wantVal);
  if (absl::Status s = sampled.select(c.x(), c.n(), one, {}, indices.ptr, values.ptr, nullptr);
      !s.ok()) {
    return c.fail(s.ToString());
  }
  const SampledThresholdResult r = sampled.plan().result(0);
  if (r.count != wantIdx.size() || indices.toHost(r.count) != wantIdx ||
      !sameBits(values.toHost(r.count), wantVal)) {
    return c.fail("device sampled threshold differs from sampledThreshold");
  }
  state.counters["rounds"] = r.rounds;
  state.counters["selected"] = static_cast<double>(r.count);
  c.time(
      [&] { return sampled.select(c.x(), c.n(), one, {}, indices.ptr, values.ptr, nullptr).ok(); },
      c.n());
}

// The threshold filter at the k-th largest magnitude: it keeps the k of the top-k (the
// input has no ties at that magnitude). It reads the count back, so it synchronizes.
void BM_Threshold(benchmark::State& state) {
  DeviceCase c(state, /*selects=*/true);
  if (!c.ok()) return;
  const SegmentData& top = cpuTopk(c.n(), c.k());
  float thr = std::abs(top.values[0]);
  for (float v : top.values) thr = std::abs(v) < thr ? std::abs(v) : thr;
  DeviceArray<uint32_t> indices(c.n());
  DeviceArray<float> values(c.n());
  DeviceScratch scratch;
  std::vector<uint32_t> wantIdx;
  std::vector<float> wantVal;
  thresholdFilter(c.host(), thr, &wantIdx, &wantVal);
  absl::StatusOr<size_t> r =
      thresholdFilterDevice(c.x(), c.n(), thr, indices.ptr, values.ptr, &scratch, nullptr);
  if (!r.ok()) return c.fail(r.status().ToString());
  if (*r != wantIdx.size() || indices.toHost(*r) != wantIdx ||
      !sameBits(values.toHost(*r), wantVal)) {
    return c.fail("device threshold filter differs from thresholdFilter");
  }
  state.counters["selected"] = static_cast<double>(*r);
  c.time(
      [&] {
        return thresholdFilterDevice(c.x(), c.n(), thr, indices.ptr, values.ptr, &scratch, nullptr)
            .ok();
      },
      c.n());
}

// Applying a top-k selection to a model of n floats: model[i] += -0.1 * value.
void BM_Apply(benchmark::State& state) {
  DeviceCase c(state, /*selects=*/true);
  if (!c.ok()) return;
  const SegmentData& top = cpuTopk(c.n(), c.k());
  DeviceArray<uint32_t> indices(top.indices.data(), c.k());
  DeviceArray<float> values(top.values.data(), c.k());
  DeviceArray<float> model(c.host().data(), c.n());
  if (indices.ptr == nullptr || values.ptr == nullptr || model.ptr == nullptr) {
    return c.fail("could not allocate the apply's arrays on the device");
  }
  std::vector<float> want = c.host();
  scatterAdd(absl::MakeSpan(want), top, -0.1f);
  if (!scatterAddDevice(indices.ptr, values.ptr, c.k(), -0.1f, model.ptr, nullptr).ok()) {
    return c.fail("device scatter-add failed");
  }
  // y + a * v may round once (FMA) or twice on either side: equal within 2 ulps.
  const std::vector<float> got = model.toHost(c.n());
  for (size_t i = 0; i < c.n(); ++i) {
    const float tolerance =
        2 * std::numeric_limits<float>::epsilon() * std::max(1.0f, std::abs(want[i]));
    if (got.size() != c.n() || !(std::abs(got[i] - want[i]) <= tolerance)) {
      return c.fail("device scatter-add differs from scatterAdd");
    }
  }
  c.time(
      [&] {
        return scatterAddDevice(indices.ptr, values.ptr, c.k(), -0.1f, model.ptr, nullptr).ok();
      },
      c.k());
}

// Packing a top-k selection as the wire format's pairs: 8 bytes per selected element.
void BM_Pack(benchmark::State& state) {
  DeviceCase c(state, /*selects=*/true);
  if (!c.ok()) return;
  const SegmentData& top = cpuTopk(c.n(), c.k());
  DeviceArray<uint32_t> indices(top.indices.data(), c.k());
  DeviceArray<float> values(top.values.data(), c.k());
  DeviceArray<uint32_t> pairs(2 * c.k());
  if (indices.ptr == nullptr || values.ptr == nullptr || pairs.ptr == nullptr) {
    return c.fail("could not allocate the pack's arrays on the device");
  }
  if (!packPairsDevice(indices.ptr, values.ptr, c.k(), pairs.ptr, nullptr).ok()) {
    return c.fail("device pack failed");
  }
  const std::vector<uint32_t> got = pairs.toHost(2 * c.k());
  for (size_t j = 0; j < c.k(); ++j) {
    uint32_t bits = 0;
    std::memcpy(&bits, &top.values[j], sizeof(bits));
    if (got.size() != 2 * c.k() || got[2 * j] != top.indices[j] || got[2 * j + 1] != bits) {
      return c.fail("device pack differs from the wire format's pair layout");
    }
  }
  c.time([&] { return packPairsDevice(indices.ptr, values.ptr, c.k(), pairs.ptr, nullptr).ok(); },
         c.k());
}

// A step's selection over ResNet-50's layout (the 25.56M input, its 161 segments; the
// 54 with dim > 1 selected, at density 1 / range(0)): SegmentedTopk's six launches against
// topkRadixDevice once per segment (six launches each), both without a host wait. Checked
// per segment against topkExact. Counters: segments selected, launches per step.
struct StepLayout {
  std::vector<SegmentRequest> requests;
  std::vector<size_t> out;  // per request, its first slot in the per-segment loop's output
  size_t total = 0;
};

StepLayout resnet50Step(double density) {
  StepLayout step;
  for (const SegmentSpec& spec : bench::resnet50Specs()) {
    if (!spec.compressed) continue;
    const size_t k = topkCount(spec.numel, density);
    step.requests.push_back({spec.offset, spec.numel, k});
    step.out.push_back(step.total);
    step.total += k;
  }
  return step;
}

// Whether the selection in (indices, values) holds each request's topkExact at `slot(i)`.
template <typename Slot>
bool matchesPerSegment(const Input& in, const StepLayout& step, const std::vector<uint32_t>& indices,
                       const std::vector<float>& values, Slot slot) {
  for (size_t i = 0; i < step.requests.size(); ++i) {
    const SegmentRequest& r = step.requests[i];
    std::vector<uint32_t> wantIdx;
    std::vector<float> wantVal;
    topkExact(absl::MakeConstSpan(in.host).subspan(r.offset, r.n), r.k, &wantIdx, &wantVal);
    const size_t at = slot(i);
    if (at + wantIdx.size() > indices.size() ||
        !std::equal(wantIdx.begin(), wantIdx.end(), indices.begin() + at) ||
        std::memcmp(wantVal.data(), values.data() + at, wantVal.size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

void BM_StepSegmented(benchmark::State& state) {
  const double density = 1.0 / static_cast<double>(state.range(0));
  const StepLayout step = resnet50Step(density);
  const int64_t n = flatNumel(bench::resnet50Specs());
  DeviceCase c(state, n, /*k=*/step.total);
  if (!c.ok()) return;
  DeviceArray<uint32_t> indices(step.total);
  DeviceArray<float> values(step.total);
  SegmentedTopk topk;
  if (!topk.select(c.x(), c.n(), step.requests, indices.ptr, values.ptr, nullptr).ok() ||
      !c.check(cudaDeviceSynchronize(), "segmented top-k")) {
    return c.fail("segmented top-k failed");
  }
  if (!matchesPerSegment(*c.input(), step, indices.toHost(step.total), values.toHost(step.total),
                         [&](size_t i) { return topk.plan().first[i]; })) {
    return c.fail("segmented top-k differs from topkExact per segment");
  }
  c.time([&] { return topk.select(c.x(), c.n(), step.requests, indices.ptr, values.ptr, nullptr).ok(); },
         c.n());
  state.counters["segments"] = static_cast<double>(step.requests.size());
  state.counters["launches"] = 6;
}

void BM_StepPerSegment(benchmark::State& state) {
  const double density = 1.0 / static_cast<double>(state.range(0));
  const StepLayout step = resnet50Step(density);
  const int64_t n = flatNumel(bench::resnet50Specs());
  DeviceCase c(state, n, /*k=*/step.total);
  if (!c.ok()) return;
  DeviceArray<uint32_t> indices(step.total);
  DeviceArray<float> values(step.total);
  DeviceScratch scratch;
  const auto run = [&] {
    for (size_t i = 0; i < step.requests.size(); ++i) {
      const SegmentRequest& r = step.requests[i];
      if (!topkRadixDevice(c.x() + r.offset, r.n, r.k, indices.ptr + step.out[i],
                           values.ptr + step.out[i], &scratch, nullptr)
               .ok()) {
        return false;
      }
    }
    return true;
  };
  if (!run() || !c.check(cudaDeviceSynchronize(), "per-segment top-k")) {
    return c.fail("per-segment top-k failed");
  }
  if (!matchesPerSegment(*c.input(), step, indices.toHost(step.total), values.toHost(step.total),
                         [&](size_t i) { return step.out[i]; })) {
    return c.fail("per-segment top-k differs from topkExact");
  }
  c.time(run, c.n());
  state.counters["segments"] = static_cast<double>(step.requests.size());
  state.counters["launches"] = 6.0 * static_cast<double>(step.requests.size());
}

// DGC's sampled threshold over ResNet-50's layout (as BM_StepSegmented), at density
// 1 / range(0): all segments in one SegmentedSampledThreshold call (range(1) == 1) against a
// call per segment. Checked per segment against sampledThreshold. Counters: segments
// selected, waits for the device per step.
void BM_StepSampled(benchmark::State& state) {
  const double density = 1.0 / static_cast<double>(state.range(0));
  const bool together = state.range(1) == 1;
  const StepLayout step = resnet50Step(density);
  const int64_t n = flatNumel(bench::resnet50Specs());
  DeviceCase c(state, n, /*k=*/step.total);
  if (!c.ok()) return;
  std::vector<SampledRequest> requests;
  for (const SegmentRequest& r : step.requests)
    requests.push_back({r.offset, r.n, density, r.offset});
  DeviceArray<uint32_t> indices(step.total);
  DeviceArray<float> values(step.total);
  SegmentedSampledThreshold sampled;
  std::vector<size_t> first(requests.size());  // per request, its first output slot
  const auto run = [&] {
    if (together) {
      if (!sampled.select(c.x(), c.n(), requests, {}, indices.ptr, values.ptr, nullptr).ok()) {
        return false;
      }
      for (size_t i = 0; i < requests.size(); ++i) first[i] = sampled.plan().first(i);
      return true;
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      first[i] = step.out[i];
      if (!sampled
               .select(c.x(), c.n(), {requests[i]}, {}, indices.ptr + first[i],
                       values.ptr + first[i], nullptr)
               .ok()) {
        return false;
      }
    }
    return true;
  };
  if (!run() || !c.check(cudaDeviceSynchronize(), "sampled threshold")) {
    return c.fail("sampled threshold failed");
  }
  const std::vector<uint32_t> gotIdx = indices.toHost(step.total);
  const std::vector<float> gotVal = values.toHost(step.total);
  for (size_t i = 0; i < requests.size(); ++i) {
    const SampledRequest& r = requests[i];
    std::vector<uint32_t> wantIdx;
    std::vector<float> wantVal;
    sampledThreshold(absl::MakeConstSpan(c.host()).subspan(r.offset, r.n), density, r.random_bits,
                     &wantIdx, &wantVal);
    if (first[i] + wantIdx.size() > gotIdx.size() ||
        !std::equal(wantIdx.begin(), wantIdx.end(), gotIdx.begin() + first[i]) ||
        std::memcmp(wantVal.data(), gotVal.data() + first[i], wantVal.size() * sizeof(float)) !=
            0) {
      return c.fail("device sampled threshold differs from sampledThreshold per segment");
    }
  }
  c.time(run, c.n());
  state.counters["segments"] = static_cast<double>(requests.size());
  state.counters["waits"] = together ? 2.0 : 2.0 * static_cast<double>(requests.size());
}

constexpr int64_t kSizes[] = {int64_t{1} << 20, 25557032, 100000000};

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : kSizes) b->Args({n});
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

void sizesAndDensities(benchmark::internal::Benchmark* b) {
  for (int64_t n : kSizes) {
    for (int64_t inverseDensity : {100, 1000}) b->Args({n, inverseDensity});
  }
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_ReadPass)->Apply(sizes);
BENCHMARK(BM_TopkRadix)->Apply(sizesAndDensities);
BENCHMARK(BM_TopkSort)->Apply(sizesAndDensities);
BENCHMARK(BM_RadixPasses)->Apply(sizesAndDensities);
BENCHMARK(BM_TopkSampled)->Apply(sizesAndDensities);
BENCHMARK(BM_Threshold)->Apply(sizesAndDensities);
BENCHMARK(BM_Apply)->Apply(sizesAndDensities);
BENCHMARK(BM_Pack)->Apply(sizesAndDensities);
BENCHMARK(BM_StepSegmented)->Arg(100)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StepPerSegment)->Arg(100)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StepSampled)
    ->ArgsProduct({{100, 1000}, {1, 0}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sparseps::gpu

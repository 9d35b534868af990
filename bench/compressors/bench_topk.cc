// Selection kernels against the memory floor and the obvious baselines, side by side:
// a plain read pass (vectorized sum), torch::topk on |x| (LibTorch, 1 thread),
// std::nth_element on a copy of |x|, exact top-k per SIMD level, the DGC sampled threshold,
// and random-k. Inputs: n floats from N(0, 1); args are n and density in 1/10000; the
// sizes run from two segments of ResNet-20 (2,304 and 36,864 floats, in microseconds) to
// 100M floats.
// Every kernel's result is checked against the exact top-k before it is timed.
// torch::topk and nth_element at 100M floats run only when the filter names them, e.g.
//   bench_topk --benchmark_filter='TorchTopk/100000000'

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "bench/bench_data.h"
#include "compressors/random_k.h"
#include "compressors/segment_spec.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"

namespace sparseps::bench {
namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "bench_topk: verification failed: %s\n", what);
    std::abort();
  }
}

struct Case {
  absl::Span<const float> x;
  double density;
  size_t k;
};

Case caseOf(const benchmark::State& state) {
  const std::vector<float>& data = normalData(static_cast<size_t>(state.range(0)));
  double density = static_cast<double>(state.range(1)) / 10000.0;
  return {data, density, topkCount(data.size(), density)};
}

// Sorted magnitudes of a selection: equal for two correct top-k results of the same data
// (they may differ only in which of equal magnitudes they took).
std::vector<float> sortedMagnitudes(absl::Span<const float> v) {
  std::vector<float> m(v.size());
  for (size_t i = 0; i < v.size(); ++i) m[i] = std::fabs(v[i]);
  std::sort(m.begin(), m.end());
  return m;
}

std::vector<float> exactMagnitudes(const Case& c) {
  std::vector<uint32_t> idx;
  std::vector<float> val;
  topkExact(c.x, c.k, &idx, &val);
  return sortedMagnitudes(val);
}

void BM_ReadPass(benchmark::State& state) {
  Case c = caseOf(state);
  timeVsRead(state, c.x, [&] { benchmark::DoNotOptimize(readPass(c.x)); });
}

void BM_TorchTopk(benchmark::State& state) {
  Case c = caseOf(state);
  torch::set_num_threads(1);
  torch::Tensor t = torch::from_blob(const_cast<float*>(c.x.data()),
                                     {static_cast<int64_t>(c.x.size())}, torch::kFloat32);
  auto run = [&] { return torch::topk(t.abs(), static_cast<int64_t>(c.k), 0, true, false); };
  {
    torch::Tensor vals = std::get<0>(run()).contiguous();
    check(sortedMagnitudes({vals.data_ptr<float>(), c.k}) == exactMagnitudes(c), "torch::topk");
  }
  timeVsRead(state, c.x, [&] { benchmark::DoNotOptimize(run()); });
}

void BM_NthElement(benchmark::State& state) {
  Case c = caseOf(state);
  std::vector<float> mag(c.x.size());
  auto run = [&] {
    for (size_t i = 0; i < c.x.size(); ++i) mag[i] = std::fabs(c.x[i]);
    std::nth_element(mag.begin(), mag.begin() + (c.k - 1), mag.end(), std::greater<float>());
    return mag[c.k - 1];
  };
  check(run() == exactMagnitudes(c).front(), "nth_element");
  timeVsRead(state, c.x, [&] { benchmark::DoNotOptimize(run()); });
}

void BM_TopkExact(benchmark::State& state) {
  Case c = caseOf(state);
  SimdLevel level = static_cast<SimdLevel>(state.range(2));
  if (usableSimdLevel(level) != level) {
    state.SkipWithError("SIMD level not supported by this CPU");
    return;
  }
  state.SetLabel(simdLevelName(level));
  std::vector<uint32_t> idx;
  std::vector<float> val;
  topkExact(c.x, c.k, &idx, &val, level);
  check(idx.size() == c.k && sortedMagnitudes(val) == exactMagnitudes(c), "topkExact");
  timeVsRead(state, c.x, [&] {
    topkExact(c.x, c.k, &idx, &val, level);
    benchmark::DoNotOptimize(idx.data());
  });
}

void BM_SampledThreshold(benchmark::State& state) {
  Case c = caseOf(state);
  std::vector<uint32_t> idx;
  std::vector<float> val;
  SampledThresholdResult r = sampledThreshold(c.x, c.density, 1, &idx, &val);
  // DGC's rule keeps between 0.8k and k on a smooth distribution, all at or above the
  // threshold, which lies below the exact k-th magnitude... or the exact top-k itself.
  check(r.count >= static_cast<size_t>(0.8 * static_cast<double>(c.k)) && r.count <= c.k,
        "sampledThreshold count");
  for (float v : val) check(std::fabs(v) >= r.threshold, "sampledThreshold threshold");
  uint64_t bits = 0;
  timeVsRead(state, c.x, [&] {
    r = sampledThreshold(c.x, c.density, ++bits, &idx, &val);
    benchmark::DoNotOptimize(idx.data());
  });
  state.counters["kept_vs_k"] = static_cast<double>(r.count) / static_cast<double>(c.k);
  state.counters["rounds"] = r.rounds;
}

void BM_RandomK(benchmark::State& state) {
  Case c = caseOf(state);
  std::vector<uint32_t> indices;
  randomKIndices(c.x.size(), c.k, 7, &indices);
  check(indices.size() == c.k, "randomKIndices");
  uint64_t bits = 0;
  timeVsRead(state, c.x, [&] {
    randomKIndices(c.x.size(), c.k, ++bits, &indices);
    benchmark::DoNotOptimize(indices.data());
  });
}

// A state update u = u + 1e-3 * g followed by the exact top-k of the new u, as the DGS
// worker does with its momentum: two passes (update, then select) against one
// (compressStreamed selects each chunk as the update makes it). vs_read is per read pass
// over u (the update itself reads u and g and writes u).
struct UpdateCase {
  std::vector<float> u;
  const std::vector<float>& g;
  size_t k;
};

UpdateCase updateCaseOf(const benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<float>& x = normalData(n);
  return {std::vector<float>(x.begin(), x.end()), normalData(n + 1),
          topkCount(n, static_cast<double>(state.range(1)) / 10000.0)};
}

void addInPlace(float* __restrict u, const float* __restrict g, size_t begin, size_t end) {
  for (size_t j = begin; j < end; ++j) u[j] += 1e-3f * g[j];
}

class UpdateVector final : public StreamedVector {
 public:
  explicit UpdateVector(UpdateCase* c) : c_(c) {}
  size_t size() const override { return c_->u.size(); }
  const float* produce(size_t begin, size_t end) override {
    addInPlace(c_->u.data(), c_->g.data(), begin, end);
    return c_->u.data() + begin;
  }
  void peek(size_t begin, size_t end, float* out) const override {
    for (size_t j = begin; j < end; ++j) out[j - begin] = c_->u[j] + 1e-3f * c_->g[j];
  }
  absl::Span<const float> whole() override { return c_->u; }

 private:
  UpdateCase* c_;
};

void BM_UpdateThenTopk(benchmark::State& state) {
  UpdateCase c = updateCaseOf(state);
  std::vector<uint32_t> idx;
  std::vector<float> val;
  timeVsRead(state, normalData(c.u.size()), [&] {
    addInPlace(c.u.data(), c.g.data(), 0, c.u.size());
    topkExact(c.u, c.k, &idx, &val);
    benchmark::DoNotOptimize(idx.data());
  });
}

void BM_UpdateStreamedTopk(benchmark::State& state) {
  UpdateCase c = updateCaseOf(state);
  ExactTopkCompressor topk;
  SegmentData out;
  UpdateVector check_run(&c);
  topk.compressStreamed(check_run, 0.0, SelectContext{}, &out);
  std::vector<uint32_t> idx;
  std::vector<float> val;
  topkExact(c.u, 1, &idx, &val);
  check(out.indices == idx, "compressStreamed");
  const double density = static_cast<double>(state.range(1)) / 10000.0;
  timeVsRead(state, normalData(c.u.size()), [&] {
    UpdateVector x(&c);
    topk.compressStreamed(x, density, SelectContext{}, &out);
    benchmark::DoNotOptimize(out.indices.data());
  });
}

// With --benchmark_repetitions, the fastest repetition: the figure least disturbed by
// other load on the machine.
double minOf(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

constexpr int64_t k1M = 1 << 20;
constexpr int64_t k25M = 25600000;
constexpr int64_t k100M = 100000000;

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {k1M, k25M, k100M}) {
    for (int64_t d : {10, 100}) b->Args({n, d});
  }
}

// Every SIMD level at 1M and 25.6M floats; at 100M only the best this CPU has.
void sizesAndLevels(benchmark::internal::Benchmark* b) {
  for (int64_t n : {k1M, k25M, k100M}) {
    for (int64_t d : {10, 100}) {
      for (SimdLevel l : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
        if (n == k100M && l != cpuSimdLevel()) continue;
        b->Args({n, d, static_cast<int64_t>(l)});
      }
    }
  }
}

// The slow baselines run at 1M and 25.6M floats; at 100M they take seconds per call.
void slowBaselines(benchmark::internal::Benchmark* b) {
  for (int64_t n : {k1M, k25M}) {
    for (int64_t d : {10, 100}) b->Args({n, d});
  }
}

// ResNet-20's segments of 16 x 16 x 3 x 3 and 64 x 64 x 3 x 3 at 1%: a small model's
// per-segment selection, all of it in cache (the best SIMD level only).
void segmentSizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {int64_t{2304}, int64_t{36864}}) b->Args({n, 100});
}
void segmentSizesAndLevel(benchmark::internal::Benchmark* b) {
  for (int64_t n : {int64_t{2304}, int64_t{36864}}) {
    b->Args({n, 100, static_cast<int64_t>(cpuSimdLevel())});
  }
}

BENCHMARK(BM_ReadPass)->Apply(segmentSizes)->Unit(benchmark::kMicrosecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_TopkExact)->Apply(segmentSizesAndLevel)->Unit(benchmark::kMicrosecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_NthElement)->Apply(segmentSizes)->Unit(benchmark::kMicrosecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_TorchTopk)->Apply(segmentSizes)->Unit(benchmark::kMicrosecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_ReadPass)->Apply(sizes)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_TopkExact)->Apply(sizesAndLevels)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_SampledThreshold)->Apply(sizes)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_RandomK)->Apply(sizes)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", minOf);
// ResNet-18's largest segment (512 x 512 x 3 x 3) and ResNet-50's whole layout, at 1%.
void updateSizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {int64_t{2359296}, k25M}) b->Args({n, 100});
}
BENCHMARK(BM_UpdateThenTopk)->Apply(updateSizes)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_UpdateStreamedTopk)->Apply(updateSizes)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_NthElement)->Apply(slowBaselines)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", minOf);
BENCHMARK(BM_TorchTopk)->Apply(slowBaselines)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", minOf);

// torch::topk and nth_element at 100M floats (one iteration each, seconds per call) are
// registered only when --benchmark_filter names them (Torch or NthElement), so that the
// CI smoke pass over the whole binary stays short.
void registerSlowBaselines(int argc, char** argv) {
  bool wanted = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--benchmark_filter=", 0) == 0 &&
        (arg.find("Torch") != std::string::npos || arg.find("NthElement") != std::string::npos)) {
      wanted = true;
    }
  }
  if (!wanted) return;
  for (auto [name, fn] : {std::pair{"BM_NthElement", BM_NthElement},
                          std::pair{"BM_TorchTopk", BM_TorchTopk}}) {
    benchmark::RegisterBenchmark(name, fn)
        ->Args({k100M, 10})
        ->Args({k100M, 100})
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->ComputeStatistics("min", minOf);
  }
}

}  // namespace
}  // namespace sparseps::bench

int main(int argc, char** argv) {
  sparseps::bench::registerSlowBaselines(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

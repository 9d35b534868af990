// compressFlat over a ResNet-50-shaped flat gradient (25.56M floats, 161 segments: conv
// and fc weights compressed, biases and BN weights dense), on 1 thread and on 2 through
// the ThreadPool, against the read pass over the same buffer. Args: threads, compressor
// (0 exact top-k, 1 sampled threshold), density in 1/10000. The 2-thread result is
// checked equal to the 1-thread one before timing.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "bench/bench_data.h"
#include "compressors/compress_flat.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"

namespace sparseps::bench {
namespace {

void BM_CompressFlat(benchmark::State& state) {
  static const SegmentSpecs specs = resnet50Specs();
  const std::vector<float>& data = normalData(flatNumel(specs));
  int threads = static_cast<int>(state.range(0));
  double density = static_cast<double>(state.range(2)) / 10000.0;
  ExactTopkCompressor topk;
  SampledThresholdCompressor sampled;
  const Compressor& c = state.range(1) == 0 ? static_cast<const Compressor&>(topk) : sampled;
  state.SetLabel(c.name());
  ThreadPool pool(threads);
  SelectContext ctx;
  ctx.seed = 1;
  std::vector<SegmentData> one = compressFlat(c, data, specs, density, ctx);
  std::vector<SegmentData> many = compressFlat(c, data, specs, density, ctx, &pool);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (one[i].indices != many[i].indices || one[i].values != many[i].values) {
      std::fprintf(stderr, "bench_compress_flat: %d threads differ on segment %zu\n", threads, i);
      std::abort();
    }
  }
  timeVsRead(state, data, [&] { benchmark::DoNotOptimize(compressFlat(c, data, specs, density, ctx, &pool)); });
  state.counters["segments"] = static_cast<double>(specs.size());
}

double minOf(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

BENCHMARK(BM_CompressFlat)
    ->ArgsProduct({{1, 2}, {0, 1}, {10, 100}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", minOf);

}  // namespace
}  // namespace sparseps::bench

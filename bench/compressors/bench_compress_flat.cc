// compressFlat over a ResNet-50-shaped flat gradient (25.56M floats, 161 segments: conv
// and fc weights compressed, biases and BN weights dense), on 1 thread and on 2 through
// the ThreadPool, against the read pass over the same buffer. Args: threads, compressor
// (0 exact top-k, 1 sampled threshold), density in 1/10000. The 2-thread result is
// checked equal to the 1-thread one before timing.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "bench/compressors/bench_data.h"
#include "compressors/compress_flat.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"

namespace sparseps::bench {
namespace {

// torchvision's resnet50: conv weights (compressed) and BN weight + bias (dense) per
// convolution, bottleneck blocks [3, 4, 6, 3], then fc weight (compressed) and bias.
SegmentSpecs resnet50Specs() {
  SegmentSpecs specs;
  size_t offset = 0;
  auto add = [&](size_t numel, bool compressed) {
    SegmentSpec s;
    s.id = static_cast<uint32_t>(specs.size());
    s.offset = offset;
    s.numel = numel;
    s.compressed = compressed;
    specs.push_back(s);
    offset += numel;
  };
  auto conv = [&](size_t out, size_t in, size_t ksize) {
    add(out * in * ksize * ksize, true);
    add(out, false);  // BN weight
    add(out, false);  // BN bias
  };
  conv(64, 3, 7);
  size_t inplanes = 64;
  const size_t planes[] = {64, 128, 256, 512};
  const int blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < blocks[stage]; ++b) {
      size_t p = planes[stage];
      conv(p, inplanes, 1);
      conv(p, p, 3);
      conv(p * 4, p, 1);
      if (b == 0) conv(p * 4, inplanes, 1);  // downsample
      inplanes = p * 4;
    }
  }
  add(1000 * 2048, true);
  add(1000, false);
  return specs;
}

void BM_CompressFlat(benchmark::State& state) {
  static const SegmentSpecs specs = resnet50Specs();
  const SegmentSpec& last = specs.back();
  const std::vector<float>& data = normalData(last.offset + last.numel);
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

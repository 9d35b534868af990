#pragma once
// Shared inputs and the memory-bandwidth floor for the benchmarks.
//  - normalData(n): n floats from N(0, 1), generated once per size (fixed seed).
//  - resnet50Specs(), resnet18CifarSpecs(), resnet20Specs(): the parameter layouts of the
//    three models, as experiments/models builds them (conv and fc weights compressed, the
//    rest dense).
//  - readPassSeconds(x): the fastest of several timed plain read passes over x (a
//    vectorized sum): the floor any one-pass kernel is measured against ("vs_read").
//  - timeVsRead: the benchmark loop, reporting vs_read and vs_read_cpu counters.

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "compressors/segment_spec.h"
#include "compressors/kernels/simd.h"

namespace sparseps::bench {

inline const std::vector<float>& normalData(size_t n) {
  static std::map<size_t, std::unique_ptr<std::vector<float>>> cache;
  auto& slot = cache[n];
  if (!slot) {
    slot = std::make_unique<std::vector<float>>(n);
    std::mt19937_64 rng(12345 + n);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : *slot) v = normal(rng);
  }
  return *slot;
}

// Appends segments to a layout in order.
class LayoutBuilder {
 public:
  void add(size_t numel, bool compressed) {
    SegmentSpec s;
    s.id = static_cast<uint32_t>(specs_.size());
    s.offset = offset_;
    s.numel = numel;
    s.compressed = compressed;
    specs_.push_back(s);
    offset_ += numel;
  }
  // A bias-free convolution and its BatchNorm's weight and bias.
  void convBn(size_t out, size_t in, size_t ksize) {
    add(out * in * ksize * ksize, true);
    add(out, false);
    add(out, false);
  }
  SegmentSpecs take() { return std::move(specs_); }

 private:
  SegmentSpecs specs_;
  size_t offset_ = 0;
};

// torchvision's resnet50 (25.56M floats, 161 segments): bottleneck blocks [3, 4, 6, 3],
// a 1x1 projection on each stage's first block, then fc 2048 -> 1000 with its bias.
inline SegmentSpecs resnet50Specs() {
  LayoutBuilder b;
  b.convBn(64, 3, 7);
  size_t inplanes = 64;
  const size_t planes[] = {64, 128, 256, 512};
  const int blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    for (int k = 0; k < blocks[stage]; ++k) {
      const size_t p = planes[stage];
      b.convBn(p, inplanes, 1);
      b.convBn(p, p, 3);
      b.convBn(p * 4, p, 1);
      if (k == 0) b.convBn(p * 4, inplanes, 1);  // downsample
      inplanes = p * 4;
    }
  }
  b.add(1000 * 2048, true);
  b.add(1000, false);
  return b.take();
}

// ResNet-18 for 32 px images (11.17M floats, 62 segments): a 3x3 stem, basic blocks
// [2, 2, 2, 2] with 1x1 projections where the shape changes, then fc 512 -> 10.
inline SegmentSpecs resnet18CifarSpecs() {
  LayoutBuilder b;
  b.convBn(64, 3, 3);
  size_t inplanes = 64;
  const size_t planes[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int k = 0; k < 2; ++k) {
      const size_t p = planes[stage];
      b.convBn(p, inplanes, 3);
      b.convBn(p, p, 3);
      if (inplanes != p) b.convBn(p, inplanes, 1);  // downsample
      inplanes = p;
    }
  }
  b.add(10 * 512, true);
  b.add(10, false);
  return b.take();
}

// He et al.'s CIFAR ResNet-20 (0.27M floats, 59 segments): a 3x3 stem of 16 channels,
// three stages of 3 basic blocks of 16, 32 and 64 channels with parameter-free shortcuts
// (option A), then fc 64 -> 10.
inline SegmentSpecs resnet20Specs() {
  LayoutBuilder b;
  b.convBn(16, 3, 3);
  size_t inplanes = 16;
  for (size_t p : {16, 32, 64}) {
    for (int k = 0; k < 3; ++k) {
      b.convBn(p, inplanes, 3);
      b.convBn(p, p, 3);
      inplanes = p;
    }
  }
  b.add(10 * 64, true);
  b.add(10, false);
  return b.take();
}

__attribute__((target("avx512f"))) inline float sumAvx512(const float* x, size_t n) {
  __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a = _mm512_add_ps(a, _mm512_loadu_ps(x + i));
    b = _mm512_add_ps(b, _mm512_loadu_ps(x + i + 16));
    c = _mm512_add_ps(c, _mm512_loadu_ps(x + i + 32));
    d = _mm512_add_ps(d, _mm512_loadu_ps(x + i + 48));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
  float s = 0;
  for (float v : lanes) s += v;
  for (; i < n; ++i) s += x[i];
  return s;
}

__attribute__((target("avx2"))) inline float sumAvx2(const float* x, size_t n) {
  __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = _mm256_add_ps(a, _mm256_loadu_ps(x + i));
    b = _mm256_add_ps(b, _mm256_loadu_ps(x + i + 8));
    c = _mm256_add_ps(c, _mm256_loadu_ps(x + i + 16));
    d = _mm256_add_ps(d, _mm256_loadu_ps(x + i + 24));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
  float s = 0;
  for (float v : lanes) s += v;
  for (; i < n; ++i) s += x[i];
  return s;
}

// The plain read pass: the fastest sum this CPU runs.
inline float readPass(absl::Span<const float> x) {
  switch (cpuSimdLevel()) {
    case SimdLevel::kAvx512: return sumAvx512(x.data(), x.size());
    case SimdLevel::kAvx2: return sumAvx2(x.data(), x.size());
    default: {
      float s = 0;
      for (float v : x) s += v;
      return s;
    }
  }
}

// Wall and calling-thread CPU seconds since some fixed point.
struct Clocks {
  double wall;
  double cpu;
  static Clocks now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return {std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(),
            static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec)};
  }
};

// The fastest of several read passes over x, wall and thread CPU seconds (each its own
// minimum), measured once per buffer.
inline Clocks readPassSeconds(absl::Span<const float> x) {
  static std::map<const float*, Clocks> cache;
  auto it = cache.find(x.data());
  if (it != cache.end()) return it->second;
  Clocks best{1e30, 1e30};
  volatile float sink = 0;
  for (int rep = 0; rep < 7; ++rep) {
    Clocks t0 = Clocks::now();
    sink = sink + readPass(x);
    Clocks t1 = Clocks::now();
    best.wall = std::min(best.wall, t1.wall - t0.wall);
    best.cpu = std::min(best.cpu, t1.cpu - t0.cpu);
  }
  cache[x.data()] = best;
  return best;
}

// Runs the benchmark loop and reports the mean time per iteration as a multiple of the
// read pass over x: vs_read on wall time, vs_read_cpu on the calling thread's CPU time
// (less disturbed when other processes share the cores; meaningless for multi-threaded
// kernels, whose helper threads it does not count).
template <typename State, typename Fn>
void timeVsRead(State& state, absl::Span<const float> x, Fn&& fn) {
  Clocks read = readPassSeconds(x);
  Clocks t0 = Clocks::now();
  for (auto _ : state) fn();
  Clocks t1 = Clocks::now();
  double iters = static_cast<double>(state.iterations());
  state.counters["vs_read"] = (t1.wall - t0.wall) / iters / read.wall;
  state.counters["vs_read_cpu"] = (t1.cpu - t0.cpu) / iters / read.cpu;
  state.counters["read_ms"] = read.wall * 1e3;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(x.size() * sizeof(float)));
}

}  // namespace sparseps::bench

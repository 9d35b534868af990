#pragma once
// Shared inputs and the memory-bandwidth floor for the compressor benchmarks.
//  - normalData(n): n floats from N(0, 1), generated once per size (fixed seed).
//  - readPassSeconds(x): the fastest of several timed plain read passes over x (a
//    vectorized sum): the floor any one-pass kernel is measured against ("vs_read").

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "compressors/simd.h"

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

inline double readPassSeconds(absl::Span<const float> x) {
  static std::map<const float*, double> cache;
  auto it = cache.find(x.data());
  if (it != cache.end()) return it->second;
  double best = 1e30;
  volatile float sink = 0;
  for (int rep = 0; rep < 7; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    sink = sink + readPass(x);
    std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  cache[x.data()] = best;
  return best;
}

// Runs the benchmark loop and reports the mean wall time per iteration as a multiple
// of the read pass over x ("vs_read").
template <typename State, typename Fn>
void timeVsRead(State& state, absl::Span<const float> x, Fn&& fn) {
  double read = readPassSeconds(x);
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) fn();
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["vs_read"] = total / static_cast<double>(state.iterations()) / read;
  state.counters["read_ms"] = read * 1e3;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(x.size() * sizeof(float)));
}

}  // namespace sparseps::bench

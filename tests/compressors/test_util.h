#pragma once
// Helpers for the compressor suites: a fresh random seed per run (traced, so a failure
// prints it), input generators, the SIMD levels this CPU can run, and the plain
// sort-based top-k reference every kernel is checked against.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compressors/kernels/magnitude_key.h"
#include "compressors/kernels/simd.h"

namespace sparseps::testing {

inline uint64_t freshSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

inline std::string seedTrace(uint64_t seed) { return "seed=" + std::to_string(seed); }

inline std::vector<SimdLevel> usableLevels() {
  std::vector<SimdLevel> out = {SimdLevel::kScalar};
  if (static_cast<int>(cpuSimdLevel()) >= static_cast<int>(SimdLevel::kAvx2)) {
    out.push_back(SimdLevel::kAvx2);
  }
  if (cpuSimdLevel() == SimdLevel::kAvx512) out.push_back(SimdLevel::kAvx512);
  return out;
}

// kRare: 1 in 500 nonzero, as a residual that few updates touched: fewer nonzeros than
// most selections ask for.
enum class Dist { kNormal, kTies, kAllEqual, kSpecial, kZeros, kRare };

inline const char* distName(Dist d) {
  switch (d) {
    case Dist::kNormal: return "normal";
    case Dist::kTies: return "ties";
    case Dist::kAllEqual: return "all-equal";
    case Dist::kSpecial: return "nan-inf-negzero";
    case Dist::kZeros: return "mostly-zero";
    case Dist::kRare: return "rare-nonzero";
  }
  return "?";
}

inline std::vector<float> makeInput(size_t n, Dist dist, std::mt19937_64* rng) {
  std::vector<float> x(n);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(-3, 3);
  std::uniform_int_distribution<int> pick(0, 9);
  std::uniform_int_distribution<int> rare(0, 499);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n; ++i) {
    switch (dist) {
      case Dist::kNormal: x[i] = normal(*rng); break;
      case Dist::kTies: {
        int v = small(*rng);
        x[i] = v == 0 ? ((*rng)() & 1 ? -0.0f : 0.0f) : static_cast<float>(v);
        break;
      }
      case Dist::kAllEqual: x[i] = (*rng)() & 1 ? -1.5f : 1.5f; break;
      case Dist::kSpecial: {
        int p = pick(*rng);
        x[i] = p == 0 ? nan : p == 1 ? -nan : p == 2 ? inf : p == 3 ? -inf : p == 4 ? -0.0f
               : p == 5 ? 0.0f : normal(*rng);
        break;
      }
      case Dist::kZeros: x[i] = pick(*rng) == 0 ? normal(*rng) : ((*rng)() & 1 ? -0.0f : 0.0f); break;
      case Dist::kRare: x[i] = rare(*rng) == 0 ? normal(*rng) : ((*rng)() & 1 ? -0.0f : 0.0f); break;
    }
  }
  return x;
}

// Sort-based reference: order by (magnitude key desc, index asc), take k, sort by index.
inline std::vector<uint32_t> referenceTopk(const std::vector<float>& x, size_t k) {
  std::vector<uint32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
    uint32_t ka = magnitudeKey(x[a]), kb = magnitudeKey(x[b]);
    return ka != kb ? ka > kb : a < b;
  });
  idx.resize(std::min(k, x.size()));
  std::sort(idx.begin(), idx.end());
  return idx;
}

// Values compared bit for bit (NaN payloads and the sign of zero included).
inline bool sameBits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

}  // namespace sparseps::testing

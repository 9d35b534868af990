#pragma once
// Reproducible randomness for selections. Worker and server derive the same 64 random
// bits from (seed, segment id, step), so random-k indices and sample offsets never travel.
// A fixed, specified generator (SplitMix64, Steele et al. 2014) rather than a standard
// library distribution, whose output may differ between library versions and machines.

#include <cstdint>

#include "compressors/compressor.h"

namespace sparseps {

inline uint64_t splitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// 64 random bits that depend on every field of ctx.
inline uint64_t selectSeed(const SelectContext& ctx) {
  uint64_t s = ctx.seed;
  uint64_t h = splitMix64(&s);
  s = h ^ ctx.segment_id;
  h = splitMix64(&s);
  s = h ^ ctx.step;
  return splitMix64(&s);
}

// Uniform in [0, bound) for bound >= 1 (Lemire's multiply-shift; bias < bound / 2^64).
inline uint64_t boundedRandom(uint64_t* state, uint64_t bound) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(splitMix64(state)) * bound) >> 64);
}

}  // namespace sparseps

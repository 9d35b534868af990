#pragma once
// The per-element randomness of the stochastic quantizers (QSGD, TernGrad, natural
// compression): a uniform in [0, 1) for element i of a segment, from the 64 random bits of
// its compression (selectSeed: seed, segment id, step). A 32-bit integer hash of (i, bits)
// instead of a sequential generator, so that a loop over elements vectorizes and any
// element's draw can be recomputed. 24 bits of resolution, as a float holds.

#include <cstdint>

namespace sparseps {

// The draw as a 24-bit integer: elementUniform is it times 2^-24, so a comparison of the
// uniform with k / 2^24 can be made in integers, exactly.
inline uint32_t elementDraw24(uint64_t bits, uint32_t i) {
  uint32_t x = (i * 0x9e3779b9u) ^ static_cast<uint32_t>(bits);
  x += static_cast<uint32_t>(bits >> 32);
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x >> 8;
}

inline float elementUniform(uint64_t bits, uint32_t i) {
  return static_cast<float>(elementDraw24(bits, i)) * (1.0f / 16777216.0f);
}

// Buckets of a segment of numel elements cut into `buckets` pieces: every bucket holds
// ceil(numel / buckets) elements but the last (codes.h's rule for per-bucket params).
inline size_t bucketLength(size_t numel, size_t buckets) {
  return buckets == 0 ? 0 : (numel + buckets - 1) / buckets;
}

}  // namespace sparseps

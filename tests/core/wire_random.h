#pragma once
// Random segments for the wire tests: uniformly random distinct indices (selection
// sampling, so they come out sorted) with normal values, and a fresh seed per run.

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "compressors/segment_data.h"
#include "compressors/segment_spec.h"
#include "tests/compressors/densify.h"

namespace sparseps::wire_test {

inline uint64_t freshSeed() { return (uint64_t{std::random_device{}()} << 32) | std::random_device{}(); }

// topkCount(numel, density) distinct indices, uniformly random, in increasing order.
inline SegmentData randomSparse(uint32_t id, uint32_t numel, double density, std::mt19937_64& rng,
                                float scale = 1.0f) {
  SegmentData segment;
  segment.segment_id = id;
  segment.numel = numel;
  size_t needed = topkCount(numel, density);
  segment.indices.reserve(needed);
  std::normal_distribution<float> value(0.0f, scale);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (uint32_t i = 0; i < numel && needed > 0; ++i) {
    if (unit(rng) * static_cast<double>(numel - i) < static_cast<double>(needed)) {
      segment.indices.push_back(i);
      segment.values.push_back(value(rng));
      --needed;
    }
  }
  return segment;
}

inline SegmentData randomDense(uint32_t id, uint32_t numel, std::mt19937_64& rng) {
  SegmentData segment;
  segment.segment_id = id;
  segment.numel = numel;
  segment.dense = true;
  std::normal_distribution<float> value(0.0f, 1.0f);
  segment.values.resize(numel);
  for (float& v : segment.values) v = value(rng);
  return segment;
}

// The segment as numel floats (tests/compressors/densify.h).
using ::sparseps::densify;

// The segment as a dense SegmentData (what kDenseF32 carries).
inline SegmentData asDense(const SegmentData& segment) {
  SegmentData dense;
  dense.segment_id = segment.segment_id;
  dense.numel = segment.numel;
  dense.dense = true;
  dense.values = densify(segment);
  return dense;
}

}  // namespace sparseps::wire_test

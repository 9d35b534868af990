#pragma once
// Test helper: a SegmentData as its numel floats (zeros where a sparse segment has no
// index), the plain reading of a segment that suites compare against.

#include <cstddef>
#include <vector>

#include "compressors/segment_data.h"

namespace sparseps {

inline std::vector<float> densify(const SegmentData& s) {
  if (s.dense) return s.values;
  std::vector<float> out(s.numel, 0.0f);
  for (size_t t = 0; t < s.indices.size(); ++t) out[s.indices[t]] = s.values[t];
  return out;
}

}  // namespace sparseps

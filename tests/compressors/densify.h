#pragma once
// Test helper: a SegmentData as its numel floats (zeros where a sparse segment has no
// index; a coded one by the plain reference decoder of code_reference.h), the plain
// reading of a segment that suites compare against.

#include <cstddef>
#include <vector>

#include "compressors/segment_data.h"
#include "tests/compressors/code_reference.h"

namespace sparseps {

inline std::vector<float> densify(const SegmentData& s) {
  if (s.dense) return s.values;
  if (s.coded()) {
    const std::vector<double> decoded = testing::refDecode(s);
    return std::vector<float>(decoded.begin(), decoded.end());
  }
  std::vector<float> out(s.numel, 0.0f);
  for (size_t t = 0; t < s.indices.size(); ++t) out[s.indices[t]] = s.values[t];
  return out;
}

}  // namespace sparseps

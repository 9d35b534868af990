#pragma once
// What DGC's sampled threshold (compressors/threshold.h) is asked and what it reports, on
// the host and on a device alike (device_kernels.h).

#include <cstddef>

namespace sparseps {

struct SampledThresholdOptions {
  double sample_ratio = 0.01;  // fraction of the segment sampled
  double upper = 1.3;          // more than upper * k pass: exact top-k among them
  double lower = 0.8;          // fewer than lower * k pass: lower the threshold...
  double decay = 0.8;          // ...by this factor
  int max_rounds = 10;
};

struct SampledThresholdResult {
  float threshold = 0;  // the last threshold applied
  size_t count = 0;     // how many were selected (== indices.size())
  size_t k = 0;         // the target, topkCount(numel, density)
  int rounds = 0;       // filter passes made
  bool exact = false;   // true when the > upper * k branch chose an exact top-k
};

}  // namespace sparseps

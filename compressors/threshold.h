#pragma once
// Threshold selection: keep |x| >= thr.
//  - thresholdFilter: one vectorized pass for a given threshold.
//  - sampledThreshold: DGC's sampled threshold (Lin et al., "Deep Gradient Compression",
//    ICLR 2018; also gradient dropping's sampled percentile), as docs/methods.md
//    states it: sample ~1% of the segment with a random start and a stride,
//      thr = min of the top ceil(samples * r) of |sample|,
//      keep |x| >= thr; if more than 1.3k pass: exact top-k among them;
//                       if fewer than 0.8k pass: thr *= 0.8 and filter again;
//      at most 10 rounds, then truncate to the first k (by index).
//    With k = topkCount(numel, r). The count it reaches is reported: it lies in
//    [0.8k, k] unless 10 rounds could not lower the threshold far enough.
//    The result is exactly that of the rule, computed faster: one streaming pass gathers
//    the sample while it keeps every element above a provisional lower bracket (from a
//    small pre-sample, about 3k elements); the rounds then filter those candidates, and
//    only a threshold below the bracket costs another pass over the segment.
// Magnitudes compare as in magnitude_key.h (NaN above Inf, -0 == +0).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "compressors/compressor.h"
#include "compressors/kernels/sampled_threshold_types.h"
#include "compressors/kernels/simd.h"

namespace sparseps {

// Appends nothing: replaces indices/values with every i where |x[i]| >= |thr|, increasing.
void thresholdFilter(absl::Span<const float> x, float thr, std::vector<uint32_t>* indices,
                     std::vector<float>* values, SimdLevel level = cpuSimdLevel());

// Where DGC's sample lies: count elements at start, start + stride, ... (all of x when
// the sample would be everything), and the rank `top` = ceil(count * r) whose magnitude is
// the threshold. The sample holds ~sample_ratio of n, but at least 2 / r elements so that
// its top holds 2 or more, as DGC's implementation does.
struct DgcSamplePlan {
  size_t start = 0;
  size_t stride = 1;
  size_t count = 0;
  size_t top = 0;
};
DgcSamplePlan dgcSamplePlan(size_t n, double density, uint64_t random_bits,
                            const SampledThresholdOptions& options);

// The thresholds of DGC's rounds: round 0's is the sample's (`first`), each next one
// `decay` times the one before; options.max_rounds of them.
std::vector<float> sampledLadder(float first, const SampledThresholdOptions& options);

// DGC's rounds, played from how many elements pass each round's threshold: passed(r) for
// ladder[r]. They stop at the first round where more than upper * k pass (exact: the top k
// of the segment, which all pass, are selected) or at least lower * k do, else after the
// last. The result's count is passed() of that round, before the truncation to k. Both the
// CPU rule (one count at a time) and a device (all rounds' counts in one pass) play them.
SampledThresholdResult playSampledRounds(absl::Span<const float> ladder, size_t k,
                                         absl::FunctionRef<size_t(int round)> passed,
                                         const SampledThresholdOptions& options);

// random_bits picks the sample's start (e.g. selectSeed(ctx)).
SampledThresholdResult sampledThreshold(absl::Span<const float> x, double density,
                                        uint64_t random_bits, std::vector<uint32_t>* indices,
                                        std::vector<float>* values,
                                        const SampledThresholdOptions& options = {},
                                        SimdLevel level = cpuSimdLevel());

// Compressor: sampledThreshold with the sample start drawn from selectSeed(ctx). On device
// memory, a step's segments are selected together (DeviceKernels::sampledThresholdSegments).
class SampledThresholdCompressor : public Compressor {
 public:
  explicit SampledThresholdCompressor(SampledThresholdOptions options = {},
                                      SimdLevel level = cpuSimdLevel())
      : options_(options), level_(level) {}
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  void compressSegments(absl::Span<const float> x,
                        absl::Span<const SegmentSelect> segments) const override;
  std::string name() const override { return "sampled"; }

 private:
  SampledThresholdOptions options_;
  SimdLevel level_;
};

}  // namespace sparseps

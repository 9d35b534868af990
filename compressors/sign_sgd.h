#pragma once
// Scaled sign compression, the compressor of EF-signSGD (Karimireddy et al., "Error
// Feedback Fixes SignSGD and other Gradient Compression Schemes", ICML 2019; signSGD:
// Bernstein et al., "signSGD: Compressed Optimisation for Non-Convex Problems", ICML 2018):
//   q = (||x||_1 / d) * sign(x)     (d = numel; sign(0) = +1)
// Travels as kSign (kSignFormat, below): one bit per element and {+scale, -scale}. With error
// feedback (gd's worker rule) this is EF-signSGD; without (--error-feedback=off) it is
// signSGD with the step scaled by the mean magnitude instead of a fixed learning rate.

#include <string>

#include "compressors/codes.h"
#include "compressors/compressor.h"

namespace sparseps {

// kSign, the code of signsgd and onebit: one bit per element, and params {v0, v1} per
// bucket (checkBuckets); element i is its field ? v1 : v0 of its bucket.
extern const CodeFormat kSignFormat;

class SignSgdCompressor : public Compressor {
 public:
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return "signsgd"; }
};

}  // namespace sparseps

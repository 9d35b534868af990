#pragma once
// TernGrad (Wen et al., "TernGrad: Ternary Gradients to Reduce Communication in
// Distributed Deep Learning", NeurIPS 2017), layer-wise: with s = max_i |x_i| over the
// segment,
//   q_i = s * sign(x_i) * b_i,  b_i ~ Bernoulli(|x_i| / s)
// so E[q_i] = x_i. Travels as kTernary (its format is in terngrad.cc): the scale and 2 bits per element. The
// paper's optional gradient clipping (to 2.5 standard deviations) is not applied.

#include <string>

#include "compressors/compressor.h"

namespace sparseps {

class TernGradCompressor : public Compressor {
 public:
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return "terngrad"; }
};

}  // namespace sparseps

#pragma once
// Casts to 16-bit floats, the baseline quantizers: fp16 (IEEE half; Micikevicius et al.,
// "Mixed Precision Training", ICLR 2018) and bf16 (bfloat16, the top half of an f32;
// Kalamkar et al., "A Study of BFLOAT16 for Deep Learning Training", arXiv 2019). Round to
// nearest, ties to even; a finite magnitude beyond the format's largest finite value
// saturates to it (with error feedback the difference stays in the residual). An infinity
// or a NaN, a diverged gradient, stays non-finite, and the receiver's decoder refuses it.
// Travel as kF16 / kBf16 (their formats are in cast.cc): 2 bytes per element.

#include <string>

#include "compressors/compressor.h"

namespace sparseps {

class CastCompressor : public Compressor {
 public:
  explicit CastCompressor(Code code) : code_(code) {}  // kF16 or kBf16
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return code_ == Code::kF16 ? "fp16" : "bf16"; }

 private:
  Code code_;
};

}  // namespace sparseps

#pragma once
// Natural compression (Horvath et al., "Natural Compression for Distributed Deep
// Learning", MSML 2022; arXiv 2019): every element is rounded to a neighbouring power of
// two at random, keeping its sign: for 2^e <= |x| < 2^(e+1),
//   q = sign(x) * 2^(e+1) with probability (|x| - 2^e) / 2^e, else sign(x) * 2^e
// so E[q] = x. On the float's bits: the exponent, rounded up with probability equal to
// the mantissa's fraction (subnormals round to 0 or 2^-126 the same way; the largest
// finite exponent saturates; an infinity or a NaN keeps exponent 255, which no decoder
// accepts). Travels as kNatural (its format is in natural.cc): 9 bits per element.

#include <string>

#include "compressors/compressor.h"

namespace sparseps {

class NaturalCompressor : public Compressor {
 public:
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return "natural"; }
};

}  // namespace sparseps

#pragma once
// 1-bit SGD (Seide et al., "1-Bit Stochastic Gradient Descent and its Application to
// Data-Parallel Distributed Training of Speech DNNs", Interspeech 2014): every element
// becomes one bit, x_i >= 0 or not, and each group of elements is reconstructed from two
// values, the means of its non-negative and of its negative elements. The paper's groups
// are the columns of a weight matrix; here they are the rows of the segment's matrix view
// (its tensor's first dimension, contiguous in the flat layout), or the whole segment
// when that is unknown. Meant for error feedback, as the paper uses it (gd's worker rule).
// Travels as kSign (sign_sgd.h): two values per row and one bit per element.

#include <string>

#include "compressors/compressor.h"

namespace sparseps {

class OneBitCompressor : public Compressor {
 public:
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return "onebit"; }
};

}  // namespace sparseps

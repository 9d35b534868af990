#pragma once
// Dense: sends the whole segment (density ignored). The baseline every sparse compressor
// is compared with, and what dense segments (biases, BN weights) always use.

#include <string>

#include "absl/types/span.h"
#include "compressors/compressor.h"

namespace sparseps {

// Fills out with a dense copy of x.
void denseSegment(absl::Span<const float> x, uint32_t segment_id, SegmentData* out);

class DenseCompressor : public Compressor {
 public:
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return "dense"; }
};

}  // namespace sparseps

#pragma once
// Strict top-k: the elements whose magnitude is strictly above the k-th largest, with
// k = topkCount(numel, density). At most k - 1 of them, and none when k = 1 or when
// the k largest magnitudes are all equal. It is the selection `|x| > kth(|x|)` that
// some gradient-dropping and DGC implementations use (a threshold taken from torch.topk,
// then a strict comparison), kept so that their experiments can be reproduced: with a
// density of 0.01 it never selects from a tensor of fewer than 200 elements. One
// departure: when the k-th largest is +-Inf or NaN, all k are kept, so that a diverged
// gradient is sent and refused by the wire (as under exact top-k), not kept unseen.

#include <string>

#include "compressors/compressor.h"

namespace sparseps {

class StrictTopkCompressor : public Compressor {
 public:
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  // Exact top-k's segments together (one selection of a device's), each then filtered.
  void compressSegments(absl::Span<const float> x,
                        absl::Span<const SegmentSelect> segments) const override;
  std::string name() const override { return "topk_strict"; }
};

}  // namespace sparseps

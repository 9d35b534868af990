#include "compressors/strict_topk.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "compressors/kernels/magnitude_key.h"
#include "compressors/registry.h"
#include "compressors/topk.h"

namespace sparseps {

namespace {

// From an exact top-k, drops every element tied with the k-th largest: what stays is
// exactly the set above it.
void dropTheKthTies(SegmentData* out) {
  if (out->indices.empty()) return;
  uint32_t kth = UINT32_MAX;
  for (float v : out->values) kth = std::min(kth, magnitudeKey(v));
  // A k-th largest that is +-Inf or NaN keeps them all: a diverged gradient travels and the
  // wire refuses it loudly, as under exact top-k, instead of staying in a residual.
  if (kth > magnitudeKey(std::numeric_limits<float>::max())) return;
  size_t kept = 0;
  for (size_t i = 0; i < out->indices.size(); ++i) {
    if (magnitudeKey(out->values[i]) == kth) continue;
    out->indices[kept] = out->indices[i];
    out->values[kept] = out->values[i];
    ++kept;
  }
  out->indices.resize(kept);
  out->values.resize(kept);
}

}  // namespace

void StrictTopkCompressor::compress(absl::Span<const float> x, double density,
                                    const SelectContext& ctx, SegmentData* out) const {
  ExactTopkCompressor().compress(x, density, ctx, out);  // host or device memory
  dropTheKthTies(out);
}

void StrictTopkCompressor::compressSegments(absl::Span<const float> x,
                                            absl::Span<const SegmentSelect> segments) const {
  ExactTopkCompressor().compressSegments(x, segments);  // a device's in one selection
  for (const SegmentSelect& s : segments) dropTheKthTies(s.out);
}

namespace builtin_compressors {

std::vector<CompressorInfo> strict_topk() {
  return {{"topk_strict",
           "the elements of magnitude strictly above the k-th largest, k = density * numel "
           "(sparse; at most k - 1, none when k = 1)",
           "the selection of the DGS reference's gradient dropping and DGC (Yan et al., "
           "ICPP 2020, github.com/yanring/GradientServer)",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<StrictTopkCompressor>();
           }}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

#include "compressors/dense.h"

#include "compressors/registry.h"

namespace sparseps {

void denseSegment(absl::Span<const float> x, uint32_t segment_id, SegmentData* out) {
  out->segment_id = segment_id;
  out->numel = static_cast<uint32_t>(x.size());
  out->dense = true;
  out->clearCoding();
  out->indices.clear();
  out->values.assign(x.begin(), x.end());
}

void DenseCompressor::compress(absl::Span<const float> x, double /*density*/,
                               const SelectContext& ctx, SegmentData* out) const {
  denseSegment(x, ctx.segment_id, out);
}

namespace builtin_compressors {

std::vector<CompressorInfo> dense() {
  return {{"dense", "every element as an f32 (no compression; the baseline)", "-", {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<DenseCompressor>();
           }}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

#include "compressors/compress_flat.h"

#include "compressors/dense.h"

namespace sparseps {

std::vector<SegmentData> compressFlat(const Compressor& compressor, absl::Span<const float> flat,
                                      const SegmentSpecs& specs, double density,
                                      const SelectContext& ctx, TaskRunner* pool) {
  std::vector<SegmentData> out(specs.size());
  auto one = [&](size_t i) {
    const SegmentSpec& spec = specs[i];
    absl::Span<const float> x = flat.subspan(spec.offset, spec.numel);
    if (!spec.compressed) {
      denseSegment(x, spec.id, &out[i]);
      return;
    }
    SelectContext c = ctx;
    c.segment_id = spec.id;
    compressor.compress(x, density, c, &out[i]);
  };
  parallelForLargestFirst(pool, specs.size(), [&](size_t i) { return specs[i].numel; }, one);
  return out;
}

}  // namespace sparseps

#include "compressors/compress_flat.h"

#include <algorithm>
#include <numeric>

#include "compressors/dense.h"

namespace sparseps {

std::vector<SegmentData> compressFlat(const Compressor& compressor, absl::Span<const float> flat,
                                      const SegmentSpecs& specs, double density,
                                      const SelectContext& ctx, ThreadPool* pool) {
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
  if (pool == nullptr || pool->threads() == 1 || specs.size() < 2) {
    for (size_t i = 0; i < specs.size(); ++i) one(i);
    return out;
  }
  std::vector<size_t> order(specs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return specs[a].numel > specs[b].numel; });
  pool->parallelFor(order.size(), [&](size_t j) { one(order[j]); });
  return out;
}

}  // namespace sparseps

#include "core/runtime/protocol.h"

#include <algorithm>

#include "compressors/apply.h"

namespace sparseps {

Message denseMessage(const SegmentSpecs& specs, absl::Span<const float> flat) {
  Message m(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    denseSegment(flat.subspan(specs[i].offset, specs[i].numel), specs[i].id, &m[i]);
  }
  return m;
}

void copyDenseInto(const Message& message, const SegmentSpecs& specs, absl::Span<float> flat) {
  for (const auto& s : message) {
    if (!s.dense || s.segment_id >= specs.size()) continue;
    const auto& spec = specs[s.segment_id];
    copyDense(s, flat.subspan(spec.offset, s.numel));
  }
}

}  // namespace sparseps

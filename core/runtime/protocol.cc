#include "core/runtime/protocol.h"

#include <algorithm>

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
    std::copy(s.values.begin(), s.values.end(), flat.begin() + spec.offset);
  }
}

}  // namespace sparseps

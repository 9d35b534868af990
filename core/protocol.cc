#include "core/protocol.h"

#include <algorithm>

namespace sparseps {

SegmentData denseSegment(uint32_t id, absl::Span<const float> values) {
  SegmentData s;
  s.segment_id = id;
  s.numel = static_cast<uint32_t>(values.size());
  s.dense = true;
  s.values.assign(values.begin(), values.end());
  return s;
}

Message denseMessage(const SegmentSpecs& specs, absl::Span<const float> flat) {
  Message m;
  m.reserve(specs.size());
  for (const auto& spec : specs) m.push_back(denseSegment(spec.id, flat.subspan(spec.offset, spec.numel)));
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

#include "core/runtime/protocol.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compressors/apply.h"

namespace sparseps {

absl::StatusOr<DecodeLimits> shardLimits(const Shard& shard, size_t num_buffers) {
  auto limits = DecodeLimits::fromSpecs(shard.local_specs);
  if (!limits.ok() || num_buffers == 0) return limits;
  if (num_buffers >= DecodeLimits::kNoSegment) {
    return absl::InvalidArgumentError(absl::StrCat(num_buffers, " BN buffer floats; the wire "
                                                   "format allows ", DecodeLimits::kNoSegment - 1));
  }
  limits->allow(buffersSegmentId(shard), static_cast<uint32_t>(num_buffers));
  return limits;
}

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

#include "optim/message_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compressors/apply.h"
#include "compressors/kernels/thread_pool.h"
#include "optim/fatal.h"

namespace sparseps {
namespace {

// The spec of the segment `s` addresses; fatal when s does not fit it (unchecked input).
const SegmentSpec& specFor(const SegmentData& s, const SegmentIndex& index) {
  const ptrdiff_t pos = index.find(s.segment_id);
  if (pos < 0) fatal("segment id ", s.segment_id, " is not in this rule's specs");
  const SegmentSpec& spec = index[static_cast<size_t>(pos)];
  if (s.numel != spec.numel) {
    fatal("segment ", s.segment_id, " has ", s.numel, " elements, the spec ", spec.numel);
  }
  return spec;
}

}  // namespace

void subtractUpdate(const Message& push, const SegmentIndex& index, float scale,
                    absl::Span<float> W, TaskRunner* runner) {
  // A message's segment ids are distinct (the wire decoder refuses a repeated one), so
  // the segments write disjoint parts of W.
  parallelForLargestFirst(
      runner, push.size(),
      [&](size_t i) { return push[i].indices.empty() ? push[i].numel : push[i].indices.size(); },
      [&](size_t i) {
        const SegmentSpec& spec = specFor(push[i], index);
        scatterAdd(W.subspan(spec.offset, spec.numel), push[i], -scale);
      });
}

void applyModelReply(const Message& reply, const SegmentIndex& index, absl::Span<float> w,
                     const VectorOps& ops) {
  std::vector<VectorOps::Placed> placed;
  placed.reserve(reply.size());
  for (const SegmentData& s : reply) {
    placed.push_back({specFor(s, index).offset, &s});
  }
  ops.applySegments(w, placed, 1.0f, VectorOps::Dense::kSet);
}

absl::Span<float> denseValues(SegmentData* s, uint32_t segment_id, size_t numel) {
  s->segment_id = segment_id;
  s->numel = static_cast<uint32_t>(numel);
  s->dense = true;
  s->clearCoding();
  s->indices.clear();
  s->values.resize(numel);
  return absl::MakeSpan(s->values);
}

void setDense(SegmentData* s, uint32_t segment_id, absl::Span<const float> x, float scale) {
  absl::Span<float> out = denseValues(s, segment_id, x.size());
  if (scale == 1.0f) {
    std::copy(x.begin(), x.end(), out.begin());
  } else {
    for (size_t i = 0; i < x.size(); ++i) out[i] = scale * x[i];
  }
}

}  // namespace sparseps

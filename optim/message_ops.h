#pragma once
// The message arithmetic every rule shares, so each method file holds only its own math:
//  - subtractUpdate: W = W - scale * p for every segment of a push (dense or sparse),
//    the segments spread over a runner's threads when one is given.
//  - applyModelReply: w = values for a dense reply segment, w = w + s for a sparse one,
//    w in the memory of the VectorOps given.
//  - denseValues / setDense: a rule writes a dense segment into a message slot whose
//    buffer it reuses from the last step, so a steady loop allocates nothing.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/vector_ops.h"
#include "optim/method.h"
#include "optim/segment_index.h"

namespace sparseps {

void subtractUpdate(const Message& push, const SegmentIndex& index, float scale,
                    absl::Span<float> W, TaskRunner* runner = nullptr);

void applyModelReply(const Message& reply, const SegmentIndex& index, absl::Span<float> w,
                     const VectorOps& ops);

// Makes *s the dense segment `segment_id` of numel values, reusing its buffer, and returns
// the values for the caller to fill.
absl::Span<float> denseValues(SegmentData* s, uint32_t segment_id, size_t numel);

// Makes *s the dense segment `segment_id` holding scale * x.
void setDense(SegmentData* s, uint32_t segment_id, absl::Span<const float> x, float scale = 1.0f);

}  // namespace sparseps

#pragma once
// compressFlat: compresses a whole flat gradient, one SegmentData per segment of the
// specs, in spec order. Compressed segments go through the compressor at `density`
// (with ctx.segment_id set to the segment's id); the others (biases, BN weights) are
// sent dense. With a runner, segments run concurrently, largest first, when they add up to
// its minFanOut() (thread_pool.h).

#include <vector>

#include "absl/types/span.h"
#include "compressors/compressor.h"
#include "compressors/segment_data.h"
#include "compressors/segment_spec.h"
#include "compressors/kernels/thread_pool.h"

namespace sparseps {

// ctx supplies step and seed; its segment_id is replaced per segment. Requires every
// segment to lie inside flat.
std::vector<SegmentData> compressFlat(const Compressor& compressor, absl::Span<const float> flat,
                                      const SegmentSpecs& specs, double density,
                                      const SelectContext& ctx, TaskRunner* pool = nullptr);

}  // namespace sparseps

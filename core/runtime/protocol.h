#pragma once
// The conversation between a worker and a server shard, on top of core/wire/wire.h:
//   server -> worker  kModel               the dense model (and BN buffers) at start; its
//                                           worker_step is the receiving worker's pushes the
//                                           server has applied (non-zero on a resume)
//   worker -> server  kPush                 the method's push; answered by one kReply
//   worker -> server  kModel|kFlagBuffers   the worker's BN running statistics (dense)
//   worker -> server  kModel|kFlagPull      asks for the dense model, answered by kModel
//   worker -> server  kShutdown             the worker is done
//   server -> worker  kShutdown             this shard dropped the worker (a bad message, a
//                                           failed send; the shard's log says which): it
//                                           stops, and its leaving ends it on the other shards
// Segment ids in a shard's messages are shard-local: parameters 0..n-1, and on shard 0
// one extra dense segment, id n, for the BN buffers.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "compressors/dense.h"
#include "compressors/segment_data.h"
#include "compressors/segment_spec.h"
#include "optim/method.h"

namespace sparseps {

inline constexpr uint32_t kFlagPull = 1u << 0;
inline constexpr uint32_t kFlagBuffers = 1u << 1;

// Every segment of specs, dense, read from flat.
Message denseMessage(const SegmentSpecs& specs, absl::Span<const float> flat);

// Copies the dense segments of message into flat (ids index specs); skips other ids.
void copyDenseInto(const Message& message, const SegmentSpecs& specs, absl::Span<float> flat);

}  // namespace sparseps

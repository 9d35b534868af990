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
// Every message states its sender's rank and the shard it is to or from. Segment ids in a
// shard's messages are shard-local: parameters 0..n-1, and on shard 0 one extra dense
// segment, id n (buffersSegmentId), for the BN buffers. The two ends of the conversation
// are state machines free of I/O: shard_session.h and worker_session.h.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compressors/dense.h"
#include "compressors/segment_data.h"
#include "compressors/segment_spec.h"
#include "core/runtime/shard_plan.h"
#include "core/wire/wire.h"
#include "optim/method.h"

namespace sparseps {

inline constexpr uint32_t kFlagPull = 1u << 0;
inline constexpr uint32_t kFlagBuffers = 1u << 1;

// The id of the BN buffers' segment in a shard's messages: the one after its parameters.
inline uint32_t buffersSegmentId(const Shard& shard) { return shard.num_segments; }

// What a message of `shard` may hold: its parameter segments, and the BN buffers when it
// keeps num_buffers of them (shard 0). Fails when a segment is too large for the wire.
absl::StatusOr<DecodeLimits> shardLimits(const Shard& shard, size_t num_buffers);

// Every segment of specs, dense, read from flat.
Message denseMessage(const SegmentSpecs& specs, absl::Span<const float> flat);

// Copies the dense segments of message into flat (ids index specs); skips other ids.
void copyDenseInto(const Message& message, const SegmentSpecs& specs, absl::Span<float> flat);

}  // namespace sparseps

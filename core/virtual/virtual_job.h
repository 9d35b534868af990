#pragma once
// VirtualJob: a whole parameter-server job in one process, in simulated time, for
// studying a cluster one does not have (16, 32, 64 workers on a laptop) with the real math.
// Every worker has its own model replica, method rule (momentum, residuals), data shard
// and BN buffers; its gradients come from real forward/backward passes (VirtualWorkload,
// implemented with LibTorch by the experiment driver). Each server shard is a real
// ShardCore with the method's real server rule. Every push, reply, initial model, BN
// upload and goodbye is encoded and decoded by the real wire format, so bytes are exact.
// Only time is simulated (core/virtual/time_model.h): a discrete-event loop orders
// compute, codec work, link transfers and server service by simulated time, so staleness,
// and its effect on accuracy, come out of the event order as on the modelled cluster.
// The loop is deterministic: with fixed step and codec times, the same inputs give the
// same events, the same math and the same records.
//
// The shards' clocks are the protocol's own (ShardSession's timeouts, on simulated time):
// a worker that sends a refused message, holds a round or stops pushing is dropped as a
// real server drops it, and the others go on.
//
// Flow of one worker step: compute (step time) -> worker rule + encode (codec) -> push
// over the worker's uplink and the shard's shared downlink -> the shard serves pushes one
// at a time in arrival order (codec) -> replies over the shard's shared uplink and the
// worker's downlink -> decode + apply (codec) -> next step. Sync and bounded-staleness
// modes hold replies exactly as ShardCore does in real runs.

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/runtime/job.h"
#include "core/runtime/snapshot.h"
#include "core/runtime/step_record.h"
#include "core/runtime/shard_session.h"
#include "core/virtual/time_model.h"
#include "core/virtual/worker_fault.h"

namespace sparseps {

// The model side of a virtual job: one worker's next step.
class VirtualWorkload {
 public:
  struct Step {
    enum class Kind { kBatch, kEpochEnd, kDone };
    Kind kind = Kind::kBatch;
    int epoch = 0;
    int64_t samples = 0;
    double loss = 0;
    int64_t correct = 0;
    double compute_seconds = 0;  // measured time of the forward/backward (kBatch)
  };
  virtual ~VirtualWorkload() = default;
  // kBatch: worker `worker`'s next batch, forward and backward at its model w with its BN
  // buffers (updated in place, as a forward in training mode does), the gradient into
  // grad. kEpochEnd: the worker finished an epoch (its BN buffers go to the servers; no
  // batch was computed). kDone: it finished training.
  virtual Step next(int worker, absl::Span<const float> w, absl::Span<float> buffers,
                    absl::Span<float> grad) = 0;
};

struct VirtualJobOptions {
  JobSpec job;           // servers, workers, method and its options, mode, schedule, encoding
  TimeModel time;
  SegmentSpecs specs;    // the whole model's segments
  std::vector<float> initial_params;
  std::vector<float> initial_buffers;  // BN running statistics
  std::function<void(const StepRecord&)> on_step = [](const StepRecord&) {};
  // Whole-model snapshots (job.server.snapshot_every epochs, and the final one).
  std::function<void(Snapshot)> on_snapshot = [](Snapshot) {};
  // Every message as its sender sends it, between ranks (shard s is rank s, worker k rank
  // servers + k): a trace. Empty: none.
  std::function<void(int from, int to, absl::Span<const uint8_t> message)> on_message;
  std::vector<WorkerFault> faults;  // workers that misbehave on purpose (none by default)
};

struct VirtualJobResult {
  double simulated_seconds = 0;   // the servers send the initial model -> last worker done
  uint64_t samples = 0;
  uint64_t steps = 0;
  uint64_t bytes_up = 0;          // all workers' pushes, BN uploads and goodbyes
  uint64_t bytes_down = 0;        // all initial models and replies
  uint64_t server_version = 0;    // shard 0
  std::map<uint64_t, uint64_t> staleness;  // staleness -> steps
  double real_compute_seconds = 0;  // the workload's forward/backward passes
  double real_codec_seconds = 0;    // method rules and wire coding, both sides
  std::vector<DroppedWorker> dropped;  // by shard 0 (every shard drops a worker another did)
  std::vector<ClippedWorker> clipped;  // by shard 0's push guard
};

absl::StatusOr<VirtualJobResult> runVirtualJob(const VirtualJobOptions& options,
                                               const MethodRegistry& methods,
                                               VirtualWorkload& workload);

}  // namespace sparseps

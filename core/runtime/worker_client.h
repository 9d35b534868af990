#pragma once
// WorkerClient: a worker's side of the parameter server over an Endpoint (Gloo, or the
// tests' in-memory hub), on flat float buffers. It sends what its session
// (worker_session.h: the protocol, the method's WorkerRule) encodes and hands the session
// what each shard sends back: it receives the initial model from every shard, then per
// step sends the push to every shard, waits for every shard's reply and has the session
// apply them to the local model. The learning rate comes with each reply.
// LibTorch-free: PsWorker (core/torch/ps_rank.h) wraps it as a LibTorch optimizer.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/job_spec.h"
#include "core/runtime/worker_session.h"
#include "core/wire/wire.h"
#include "optim/method.h"
#include "transport/endpoint.h"

namespace sparseps {

// What one step cost and saw.
struct StepStats {
  uint64_t bytes_up = 0;
  uint64_t bytes_down = 0;
  uint64_t staleness = 0;   // server updates by others between this worker's two replies
  double compress_seconds = 0;
  double communicate_seconds = 0;
};

class WorkerClient {
 public:
  WorkerClient(Endpoint& endpoint, WorkerSession session);

  // Receives the initial model into w (and the BN buffers into buffers); the step count
  // continues from the servers' (ServerProgress::worker_steps).
  absl::StatusOr<ServerProgress> start(absl::Span<float> w, absl::Span<float> buffers);
  absl::Status step(absl::Span<const float> grad, absl::Span<float> w, int epoch,
                    StepStats* stats);
  absl::Status sendBuffers(absl::Span<const float> buffers);
  // The servers' current dense model and averaged BN buffers, for evaluation.
  absl::StatusOr<ServerProgress> pullModel(absl::Span<float> w, absl::Span<float> buffers);
  // Says goodbye to every shard; a shard that has already shut down in order is done
  // with this worker too.
  absl::Status finish();
  // The method's own worker state (momentum, residuals) for a checkpoint; loading
  // changes nothing unless the bytes are a valid state for this rule.
  std::string saveRuleState() const { return session_.rule().saveState(); }
  absl::Status loadRuleState(const std::string& bytes) { return session_.rule().loadState(bytes); }

  float lr() const { return session_.lr(); }
  // The rate the next push is made with (the rules' StepContext and the push's header),
  // until the next reply's rate replaces it: a schedule of the caller's own.
  void setLr(float lr) { session_.setLr(lr); }
  uint64_t steps() const { return session_.steps(); }

 private:
  // Sends each shard its message of out_ (one per shard).
  absl::Status sendToShards(uint64_t* bytes);
  absl::Status sendToShard(int shard, absl::Span<const uint8_t> message, uint64_t* bytes);
  // Receives one message from every shard, in any order, into the session; fails on a
  // server shutdown.
  absl::Status receiveFromAllShards(MessageKind expected, uint64_t* bytes);

  Endpoint& endpoint_;
  WorkerSession session_;
  // Reused across steps, so a steady loop allocates nothing: the next frame to receive
  // into, each shard's last frame (the session's decoded message borrows its payload),
  // and the messages to send, one per shard.
  Frame frame_;
  std::vector<Frame> shard_frames_;
  std::vector<std::vector<uint8_t>> out_;
};

}  // namespace sparseps

#pragma once
// WorkerClient: a worker's side of the parameter server, on flat float buffers. It
// receives the initial model from every shard, then per step turns the gradient into a
// push with the method's WorkerRule, splits it by shard, sends it, waits for every
// shard's reply (one outstanding push, as the reference implementation does) and
// applies the replies to the local model. The learning rate comes with each reply.
// LibTorch-free: PsWorker (core/torch/ps_rank.h) wraps it as a LibTorch optimizer.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/job_spec.h"
#include "core/runtime/shard_plan.h"
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

// Where the servers' training stands, as a model message from them says.
struct ServerProgress {
  uint64_t version = 0;
  // This worker's pushes the servers have applied: 0 in a new job; on a resume, where the
  // worker stands in its data (its epoch and the batch within it).
  uint64_t worker_steps = 0;
  float lr = 0;
};

class WorkerClient {
 public:
  // The job says which ranks serve and how pushes are encoded; num_buffers BN buffer
  // floats travel to and from shard 0.
  WorkerClient(Endpoint& endpoint, const JobSpec& job, ShardPlan plan, SegmentSpecs specs,
               std::unique_ptr<WorkerRule> rule, size_t num_buffers);

  // Receives the initial model into w (and the BN buffers into buffers); the step count
  // continues from the servers' (ServerProgress::worker_steps).
  absl::StatusOr<ServerProgress> start(absl::Span<float> w, absl::Span<float> buffers);
  absl::Status step(absl::Span<const float> grad, absl::Span<float> w, int epoch,
                    StepStats* stats);
  absl::Status sendBuffers(absl::Span<const float> buffers);
  // The servers' current dense model and averaged BN buffers, for evaluation.
  absl::StatusOr<ServerProgress> pullModel(absl::Span<float> w, absl::Span<float> buffers);
  absl::Status finish();
  // The method's own worker state (momentum, residuals) for a checkpoint; loading
  // changes nothing unless the bytes are a valid state for this rule.
  std::string saveRuleState() const { return rule_->saveState(); }
  absl::Status loadRuleState(const std::string& bytes) { return rule_->loadState(bytes); }

  float lr() const { return lr_; }
  // The rate the next push is made with (the rules' StepContext and the push's header),
  // until the next reply's rate replaces it: a schedule of the caller's own.
  void setLr(float lr) { lr_ = lr; }
  uint64_t steps() const { return step_; }

 private:
  absl::Status sendToShard(int shard, MessageHeader header, const Message& segments,
                           uint64_t* bytes);
  // Receives one message from every shard, in any order, into from_shard_; fails on a
  // server shutdown.
  absl::Status receiveFromAllShards(MessageKind expected, uint64_t* bytes);
  absl::StatusOr<ServerProgress> receiveModel(absl::Span<float> w, absl::Span<float> buffers);

  Endpoint& endpoint_;
  ShardPlan plan_;
  SegmentSpecs specs_;
  std::unique_ptr<WorkerRule> rule_;
  const std::vector<int> server_ranks_;  // rank of shard s
  const EncodeOptions encode_;
  const size_t num_buffers_;
  std::vector<DecodeLimits> limits_;  // per shard
  // Reused across steps, so a steady loop allocates nothing: the push, its split by shard,
  // the next frame to receive into, each shard's last frame and its decoded message (whose
  // dense segments borrow that frame's payload), and the bytes sent.
  Message push_;
  std::vector<Message> to_shard_;
  Frame frame_;
  std::vector<Frame> shard_frames_;
  std::vector<DecodedMessage> from_shard_;
  std::vector<uint8_t> out_;
  float lr_ = 0;
  uint64_t step_ = 0;
  uint64_t last_version_ = 0;
};

}  // namespace sparseps

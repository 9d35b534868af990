#pragma once
// WorkerSession: a worker's side of the protocol (protocol.h) as a state machine free of
// I/O. It encodes what the worker sends each shard (its push, split by shard; its BN
// buffers; a pull; its goodbye), checks and decodes what each shard sends back, and once
// every shard's answer is in, applies them to the worker's model with the method's
// WorkerRule. The Gloo client (worker_client.h) and the virtual-time job
// (core/virtual/virtual_job.h) drive the same session; they own sending, receiving and
// time. One push is outstanding at a time, as in the reference implementation.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/runtime/job_spec.h"
#include "core/runtime/shard_plan.h"
#include "core/wire/wire.h"
#include "optim/method.h"

namespace sparseps {

// Where the servers' training stands, as a model message from them says.
struct ServerProgress {
  uint64_t version = 0;
  // This worker's pushes the servers have applied: 0 in a new job; on a resume, where the
  // worker stands in its data (its epoch and the batch within it).
  uint64_t worker_steps = 0;
  float lr = 0;
};

class WorkerSession {
 public:
  // Worker rank `rank` of the job; num_buffers BN buffer floats travel to and from shard 0.
  static absl::StatusOr<WorkerSession> make(const JobSpec& job, int rank, ShardPlan plan,
                                            std::unique_ptr<WorkerRule> rule, size_t num_buffers);

  int numShards() const { return plan_.numShards(); }
  size_t numBuffers() const { return num_buffers_; }
  int shardRank(int shard) const { return shard; }  // shard s is rank s

  // This step's push from grad at model w: (*out)[s] the message for shard s.
  absl::Status push(absl::Span<const float> grad, absl::Span<const float> w, int epoch,
                    std::vector<std::vector<uint8_t>>* out);
  // The BN buffers, for shard 0.
  absl::Status buffers(absl::Span<const float> buffers, std::vector<uint8_t>* out);
  // A request for shard s's dense model, and the goodbye to it.
  absl::Status pull(int shard, std::vector<uint8_t>* out);
  absl::Status goodbye(int shard, std::vector<uint8_t>* out);

  // Shard `shard`'s message, header and payload as they arrived, which must be of kind
  // `expected` (kModel after a start or a pull, kReply after a push). Its dense segments
  // may borrow the payload: it must stay unchanged until takeModel or applyReplies. A
  // shard's goodbye is an Aborted error (it dropped this worker); a bad message DataLoss.
  absl::Status receive(int shard, absl::Span<const uint8_t> header,
                       absl::Span<const uint8_t> payload, MessageKind expected);
  // Every shard's model in: copies it into w and buffers. `adopt` (the start) takes the
  // servers' rate, version and this worker's step count; a pull changes none of them.
  ServerProgress takeModel(absl::Span<float> w, absl::Span<float> buffers, bool adopt);
  // Every shard's reply in: applies them to w, takes the servers' rate and version, and
  // counts the step. Returns the staleness: server updates by others since the last reply.
  uint64_t applyReplies(absl::Span<float> w);

  float lr() const { return lr_; }
  // The rate the next push is made with, until the next reply's replaces it.
  void setLr(float lr) { lr_ = lr; }
  uint64_t steps() const { return step_; }
  uint64_t version() const { return last_version_; }
  const WorkerRule& rule() const { return *rule_; }
  WorkerRule& rule() { return *rule_; }

 private:
  WorkerSession(const JobSpec& job, int rank, ShardPlan plan, std::unique_ptr<WorkerRule> rule,
                size_t num_buffers,
                std::vector<DecodeLimits> limits);
  absl::Status encode(int shard, MessageHeader header, const Message& segments,
                      std::vector<uint8_t>* out) const;

  int rank_;
  EncodeOptions encode_;
  ShardPlan plan_;
  std::unique_ptr<WorkerRule> rule_;
  size_t num_buffers_;
  std::vector<DecodeLimits> limits_;  // per shard
  // Reused across steps, so a steady loop allocates nothing: the push, its split by shard,
  // and each shard's last message decoded.
  Message push_;
  std::vector<Message> to_shard_;
  std::vector<DecodedMessage> from_shard_;
  float lr_ = 0;
  uint64_t step_ = 0;
  uint64_t last_version_ = 0;
};

}  // namespace sparseps

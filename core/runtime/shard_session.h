#pragma once
// ShardSession: a server shard's side of the protocol (protocol.h) as a state machine free
// of I/O. It turns each message a worker sent into the messages to send back, encoded and
// in order; ShardCore, inside it, holds the model and the consistency mode. The Gloo loop
// (server.h) and the virtual-time job (core/virtual/virtual_job.h) drive the same session,
// so who may send what, which segments a message may carry and how each answer is stamped
// are written once. The driver owns time, sending and its own failures: a message that
// cannot be sent, or one the session refused, makes it call lose() (and goodbye() where
// the worker can still hear it).

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/runtime/job_spec.h"
#include "core/runtime/shard_core.h"
#include "core/runtime/shard_plan.h"
#include "core/wire/wire.h"

namespace sparseps {

// One message for the driver to send to a worker. A message that could not be encoded
// (a rule made invalid segments) has a failed status and no bytes: the driver treats it
// as a failed send.
struct Outgoing {
  int worker = 0;
  absl::Status status;
  std::vector<uint8_t> bytes;
};

// The messages a session asks its driver to send, in order. clear() keeps every message's
// memory for the next ones, so a steady loop allocates nothing per message.
class Outbox {
 public:
  Outgoing& add(int worker);
  size_t size() const { return size_; }
  Outgoing& operator[](size_t i) { return entries_[i]; }
  void clear() { size_ = 0; }

 private:
  std::vector<Outgoing> entries_;
  size_t size_ = 0;
};

// What a received message was, for the driver's bookkeeping (a push restarts the worker's
// idle clock; a goodbye ends its stream).
enum class Received { kPush, kBuffers, kPull, kGoodbye };

class ShardSession {
 public:
  // Shard `shard` of the job, serving the parameter range `range` through core.
  static absl::StatusOr<ShardSession> make(ShardCore& core, const JobSpec& job, int shard,
                                           const Shard& range);

  // The model `worker` starts from (stamped with where it resumes in its data), with the
  // rate JobSpec::start_lr when set.
  void start(int worker, Outbox* out);
  // One message from `worker`, its header and payload as they arrived: checked (the sender
  // it states, the segments it may carry, the poisoning guard), handed to the core, and
  // answered into out. An error names what was wrong; the driver drops the worker.
  absl::StatusOr<Received> receive(int worker, absl::Span<const uint8_t> header,
                                   absl::Span<const uint8_t> payload, Outbox* out);
  // The worker is gone (dead, refused, or a send to it failed): the replies its leaving
  // releases (a sync round, held replies) go into out.
  void lose(int worker, Outbox* out);
  // Tells a dropped worker that this shard stopped serving it.
  void goodbye(int worker, Outbox* out);

  int workerRank(int worker) const { return job_->num_servers + worker; }
  int shard() const { return shard_; }
  ShardCore& core() { return *core_; }

 private:
  ShardSession(ShardCore& core, const JobSpec& job, int shard, const Shard& range,
               DecodeLimits limits);
  void encode(int worker, const MessageHeader& header, const Message& segments, Outbox* out);
  void model(int worker, float lr, Outbox* out);
  void encodeReplies(Outbox* out);

  ShardCore* core_;
  const JobSpec* job_;
  int shard_;
  SegmentSpecs specs_;  // the shard's parameter segments, shard-local ids
  uint32_t buffers_id_;
  DecodeLimits limits_;
  // Reused across messages: the decoded payload and the core's replies.
  Message in_;
  std::vector<Reply> replies_;
};

}  // namespace sparseps

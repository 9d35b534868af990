#pragma once
// ShardSession: a server shard's side of the protocol (protocol.h) as a state machine free
// of I/O. It turns each message a worker sent into the messages to send back, encoded and
// in order; ShardCore, inside it, holds the model and the consistency mode. It also keeps
// the protocol's clocks (shard_timers.h) and decides who is dropped: a worker whose message
// it refused, that died, that a send could not reach, that held a round past the peer
// timeout or made no push within its idle bound. The Gloo loop (shard_loop.h, over Gloo or
// the tests' in-memory hub) and the virtual-time job (core/virtual/virtual_job.h) drive the
// same session on their own clocks: each input carries the driver's time, and the driver
// calls handleTimeout once nextTimeout() has come. So who may send what, how each answer is
// stamped, and when a worker is given up are written once.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/runtime/job_spec.h"
#include "core/runtime/shard_core.h"
#include "core/runtime/shard_plan.h"
#include "core/runtime/shard_timers.h"
#include "core/wire/wire.h"

namespace sparseps {

// One message for the driver to send to a worker. A message that could not be encoded
// (a rule made invalid segments) has a failed status and no bytes: the driver treats it
// as a failed send. An entry with `cut` set is no message: the worker stalled and would
// not listen, so the driver closes its connection instead (for that reason), which the
// worker and the other shards see as this shard's death.
struct Outgoing {
  int worker = 0;
  absl::Status status;
  std::vector<uint8_t> bytes;
  std::string cut;
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

// What a received message was.
enum class Received { kPush, kBuffers, kPull, kGoodbye };

// A worker the shard stopped serving before it finished: it died, closed, sent a message
// the shard refused, or stalled.
struct DroppedWorker {
  int worker = -1;
  int rank = -1;
  double seconds = 0;  // on the driver's clock, since the shard began
  uint64_t pushes = 0;  // of its pushes this shard had applied
  std::string reason;
};

// A worker whose pushes the push guard scaled down (push_guard.h), and how many.
struct ClippedWorker {
  int worker = -1;
  int rank = -1;
  uint64_t pushes = 0;
};

class ShardSession {
 public:
  // Shard `shard` of the job, serving the parameter range `range` through core.
  static absl::StatusOr<ShardSession> make(ShardCore& core, const JobSpec& job, int shard,
                                           const Shard& range);

  // The protocol's clock: when handleTimeout is next due (kNever: not until an input), and
  // what is due at `now`: the first models of the workers whose start has come, and the
  // drops of a held round's stallers and of idle workers.
  ShardTime nextTimeout() const;
  void handleTimeout(ShardTime now, Outbox* out);
  // One message from `worker` (a listening one), its header and payload as they arrived:
  // checked (the sender it states, the segments it may carry, the poisoning guard), handed
  // to the core, and answered into out. A refused message drops the worker (its leaving's
  // answers and its goodbye go into out), and the error says why.
  absl::StatusOr<Received> receive(int worker, absl::Span<const uint8_t> header,
                                   absl::Span<const uint8_t> payload, ShardTime now, Outbox* out);
  // The driver's news: the worker is dead or closed (`why`), a message to it left at `now`
  // (its idle clock restarts), or could not be sent (the worker is dropped).
  void peerFailed(int worker, const std::string& why, ShardTime now, Outbox* out);
  void sent(int worker, ShardTime now);
  void sendFailed(int worker, const std::string& why, ShardTime now, Outbox* out);

  // Whether the driver should still receive from `worker`: not dropped, no goodbye yet.
  bool listening(int worker) const { return listening_[worker]; }
  bool anyListening() const;
  const std::vector<DroppedWorker>& dropped() const { return dropped_; }
  // The workers whose pushes the core's guard clipped so far, in worker order.
  std::vector<ClippedWorker> clipped() const;
  int workerRank(int worker) const { return job_->num_servers + worker; }
  int shard() const { return shard_; }
  ShardCore& core() { return *core_; }

 private:
  ShardSession(ShardCore& core, const JobSpec& job, int shard, const Shard& range,
               DecodeLimits limits);
  void encode(int worker, const MessageHeader& header, const Message& segments, Outbox* out);
  void model(int worker, float lr, Outbox* out);
  void encodeReplies(Outbox* out);
  // The model `worker` starts from (stamped with where it resumes in its data), with the
  // rate JobSpec::start_lr when set.
  void start(int worker, Outbox* out);
  // Tells a dropped worker that this shard stopped serving it.
  void goodbye(int worker, Outbox* out);
  absl::StatusOr<Received> handle(int worker, absl::Span<const uint8_t> header,
                                  absl::Span<const uint8_t> payload, Outbox* out);
  // Stops serving `worker`: the replies its leaving releases (a sync round, held replies),
  // then its goodbye, or with `stalled` the cut of its connection.
  void drop(int worker, const std::string& why, ShardTime now, Outbox* out, bool stalled = false);

  ShardCore* core_;
  const JobSpec* job_;
  int shard_;
  SegmentSpecs specs_;  // the shard's parameter segments, shard-local ids
  uint32_t buffers_id_;
  DecodeLimits limits_;
  ShardTimers timers_;
  std::vector<bool> listening_;  // per worker
  std::vector<uint64_t> pushes_;  // per worker: its pushes applied here
  std::vector<DroppedWorker> dropped_;
  // Reused across messages: the decoded payload and the core's replies.
  Message in_;
  std::vector<Reply> replies_;
};

}  // namespace sparseps

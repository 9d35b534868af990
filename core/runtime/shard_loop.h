#pragma once
// ShardLoop: the Gloo loop of one server shard (shard s is rank s). It sends every worker the
// initial model, then receives from any live worker, hands each message to the shard's
// session (shard_session.h: the checks, the core, the replies) and sends what it answers.
// A worker that dies or sends a malformed message is logged by rank and dropped; the
// others go on. A worker that makes no push is dropped too, at a bound that follows the steps
// seen (progressBound): the clock starts when the message it waits for was sent to it, so
// neither the server's own delays nor a slow link count against it. The job
// says who the workers are, how replies are encoded, where the log goes and the
// checkpoints (every checkpoint_every versions and when the loop ends).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/runtime/job_spec.h"
#include "core/runtime/shard_core.h"
#include "core/runtime/shard_session.h"
#include "core/wire/wire.h"
#include "transport/endpoint.h"

namespace sparseps {

// A worker the shard stopped serving before it finished: it died, closed, or sent a
// message the shard refused.
struct DroppedWorker {
  int worker = -1;
  int rank = -1;
  double seconds = 0;  // since the shard's loop started
  std::string reason;
};

// A worker whose pushes the push guard scaled down (push_guard.h), and how many.
struct ClippedWorker {
  int worker = -1;
  int rank = -1;
  uint64_t pushes = 0;
};

struct ShardStats {
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t messages_in = 0;
  uint64_t messages_out = 0;
  std::vector<DroppedWorker> dropped;  // in the order they were dropped
  std::vector<ClippedWorker> clipped;  // when the loop ended, by worker
  // When the loop ended: the pushes this shard applied and the global epochs they make, a
  // resumed run's earlier ones included.
  uint64_t pushes = 0;
  double epochs = 0;
};

class ShardLoop {
 public:
  // A worker is dropped once it has made no push for kIdlePeerTimeouts peer timeouts, or for
  // kIdleSteps of its own longest step or of the workers' median step, whichever is longest:
  // a worker that is only slow keeps the bound of its own pace (a step is the time from the
  // message it waited for, its model or its reply, being sent to its next push).
  static constexpr int kIdlePeerTimeouts = 4;
  static constexpr int kIdleSteps = 10;
  // The session (and the job it was made with) outlives the server.
  ShardLoop(Endpoint& endpoint, ShardSession& session, const JobSpec& job,
            uint64_t layout_fingerprint);
  // Runs until every worker is done or dropped. Errors only when the endpoint breaks or
  // a checkpoint cannot be written.
  absl::Status run();
  const ShardStats& stats() const { return stats_; }

 private:
  // Sends the session's answers; a failed send drops its worker (whose leaving may answer
  // more, sent in the same pass).
  void send();
  // Removes rank from the ranks the loop receives from; false if it was not there.
  bool stopListening(int rank);
  void drop(int worker, const std::string& why, bool stalled = false);
  // When the round a held reply waits on is past the job's peer timeout (none if no
  // reply is held), and the drop of the workers it still waits on.
  Deadline roundDeadline();
  void dropStallers();
  // Progress: a live worker that makes no push for progressBound(w) after it was served,
  // while none of its pushes is unanswered, is dropped, in every mode (an async job would
  // otherwise wait for it forever).
  std::chrono::steady_clock::duration progressBound(int worker);
  Deadline pushDeadline();
  void dropIdle();
  void notePush(int worker);
  // JobSpec::start_gap: when the next worker is to be sent its first model (none when all
  // have been), and the sending of every start that is due.
  Deadline startOf(int worker) const;
  Deadline nextStart() const;
  void startDue();
  absl::Status maybeCheckpoint(bool final);
  int workerOf(int rank) const;

  Endpoint& endpoint_;
  ShardSession& session_;
  ShardCore& core_;
  const JobSpec& job_;
  const uint64_t layout_fingerprint_;
  const std::vector<int> worker_ranks_;  // rank of worker i
  const std::string checkpoint_path_;    // this shard's; empty: none
  std::vector<int> live_ranks_;
  uint64_t last_checkpoint_version_ = 0;
  std::chrono::steady_clock::time_point started_;  // when run() began
  std::optional<Deadline> waiting_since_;  // since when a held reply waits on a worker
  std::vector<Deadline> served_;  // per worker: when its model or last reply was sent to it
  size_t started_workers_ = 0;    // workers 0 .. this - 1 were sent their first model
  // Per worker: its longest step so far (zero before its first push).
  std::vector<std::chrono::steady_clock::duration> longest_step_;
  std::vector<std::chrono::steady_clock::duration> scratch_;
  ShardStats stats_;
  // Reused across messages: the frame received, the messages to send.
  Frame frame_;
  Outbox out_;
};

}  // namespace sparseps

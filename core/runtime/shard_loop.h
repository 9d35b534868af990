#pragma once
// ShardLoop: the Gloo loop of one server shard (shard s is rank s). It sends every worker the
// initial model, then receives from any live worker, hands each message to the shard's
// session (shard_session.h: the checks, the core, the replies) and sends what it answers.
// A worker that dies or sends a malformed message is logged by rank and dropped; the
// others go on. A worker that makes no push for kIdlePeerTimeouts peer timeouts, or
// kIdleSteps of the workers' median step if that is longer, is dropped too. The job
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

struct ShardStats {
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t messages_in = 0;
  uint64_t messages_out = 0;
  std::vector<DroppedWorker> dropped;  // in the order they were dropped
  // When the loop ended: the pushes this shard applied and the global epochs they make, a
  // resumed run's earlier ones included.
  uint64_t pushes = 0;
  double epochs = 0;
};

class ShardLoop {
 public:
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
  // Progress: a live worker that makes no push for pushBound() while none of its pushes is
  // unanswered is dropped, in every mode (an async job would otherwise wait for it
  // forever).
  std::chrono::steady_clock::duration pushBound();
  Deadline pushDeadline();
  void dropIdle();
  void notePush(int worker);
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
  std::vector<Deadline> last_push_;        // per worker: its last push, or its start
  std::vector<std::chrono::steady_clock::duration> interval_;  // between its last two pushes
  std::vector<std::chrono::steady_clock::duration> scratch_;
  ShardStats stats_;
  // Reused across messages: the frame received, the messages to send.
  Frame frame_;
  Outbox out_;
};

}  // namespace sparseps

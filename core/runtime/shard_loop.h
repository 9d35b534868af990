#pragma once
// ShardLoop: the loop of one server shard (shard s is rank s) over an Endpoint (Gloo's
// Channel, or the tests' in-memory hub). It drives the shard's session (shard_session.h:
// the checks, the core, the replies, the clocks and the drops) on the steady clock:
// receives from every worker the session still listens to, until the session's next
// timeout, and sends what it answers. A worker that dies or is dropped is logged by rank;
// the others go on. The job says who the workers are, how replies are encoded, where the
// log goes and the checkpoints (every checkpoint_every versions and when the loop ends).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/runtime/job_spec.h"
#include "core/runtime/shard_core.h"
#include "core/runtime/shard_session.h"
#include "core/wire/wire.h"
#include "transport/endpoint.h"

namespace sparseps {

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
  // The session (and the job it was made with) outlives the server.
  ShardLoop(Endpoint& endpoint, ShardSession& session, const JobSpec& job,
            uint64_t layout_fingerprint);
  // Runs until every worker is done or dropped. Errors only when the endpoint breaks or
  // a checkpoint cannot be written.
  absl::Status run();
  const ShardStats& stats() const { return stats_; }

 private:
  // The session's time: since run() began.
  ShardTime now() const;
  // Sends the session's answers (or cuts a stalled worker's connection); a failed send
  // drops its worker, whose leaving may answer more, sent in the same pass.
  void send();
  absl::Status maybeCheckpoint(bool final);
  int workerOf(int rank) const;

  Endpoint& endpoint_;
  ShardSession& session_;
  ShardCore& core_;
  const JobSpec& job_;
  const uint64_t layout_fingerprint_;
  const std::vector<int> worker_ranks_;  // rank of worker i
  const std::string checkpoint_path_;    // this shard's; empty: none
  std::vector<int> listening_ranks_;
  uint64_t last_checkpoint_version_ = 0;
  std::chrono::steady_clock::time_point started_;  // when run() began
  ShardStats stats_;
  // Reused across messages: the frame received, the messages to send.
  Frame frame_;
  Outbox out_;
};

}  // namespace sparseps

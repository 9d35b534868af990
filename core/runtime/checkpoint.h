#pragma once
// Server checkpoints: everything a server shard needs to resume — the model W, the
// averaged BN buffers, the version, the pushes applied (which fix the epoch and so the
// learning rate), the per-worker step counters and the method's own state (residuals,
// W_sync). Written atomically: a temporary file is written and fsync'ed, then renamed
// over the old checkpoint, so a crash at any moment leaves either the old or the new one.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sparseps {

struct ShardCheckpoint {
  uint64_t layout_fingerprint = 0;  // refuses to resume a different model
  uint64_t version = 0;
  uint64_t pushes = 0;
  std::vector<float> model;
  std::vector<float> buffers;
  std::vector<uint64_t> worker_steps;
  std::string method_state;
};

absl::Status saveCheckpoint(const std::string& path, const ShardCheckpoint& checkpoint);
absl::StatusOr<ShardCheckpoint> loadCheckpoint(const std::string& path);
// loadCheckpoint for a resume of a model with this layout: a checkpoint of another model is
// FailedPrecondition, naming both fingerprints.
absl::StatusOr<ShardCheckpoint> loadCheckpointToResume(const std::string& path,
                                                        uint64_t layout_fingerprint);

// Worker checkpoints: a worker's method state (momentum, residuals), which the servers do
// not hold, tagged with the epochs it had finished so that a resume uses it only where
// the servers resume too. Written atomically like the server's.
struct WorkerCheckpoint {
  uint64_t layout_fingerprint = 0;
  uint64_t epochs_done = 0;
  std::string method;        // refuses to load another method's state
  std::string method_state;  // WorkerRule::saveState
};

absl::Status saveWorkerCheckpoint(const std::string& path, const WorkerCheckpoint& checkpoint);
absl::StatusOr<WorkerCheckpoint> loadWorkerCheckpoint(const std::string& path);

}  // namespace sparseps

#include "core/runtime/job_spec.h"

#include "absl/strings/str_cat.h"

namespace sparseps {

std::vector<int> JobSpec::serverRanks() const {
  std::vector<int> ranks;
  for (int s = 0; s < num_servers; ++s) ranks.push_back(s);
  return ranks;
}

std::vector<int> JobSpec::workerRanks() const {
  std::vector<int> ranks;
  for (int w = 0; w < num_workers; ++w) ranks.push_back(num_servers + w);
  return ranks;
}

std::string JobSpec::checkpointPathOf(int shard) const {
  return checkpoint_path.empty() ? "" : absl::StrCat(checkpoint_path, ".shard", shard);
}

absl::Status JobSpec::validate() const {
  if (num_servers < 1) return absl::InvalidArgumentError("servers: must be at least 1");
  if (num_workers < 1) {
    return absl::InvalidArgumentError(
        "world size: must leave at least one worker besides the server shards");
  }
  if (peer_timeout.count() <= 0) {
    return absl::InvalidArgumentError("peer timeout: must be positive");
  }
  if (!(start_gap >= 0 && start_gap <= 86400) || !(start_lr >= 0 && start_lr < 1e6)) {
    return absl::InvalidArgumentError(
        "start_gap must be in [0, 86400] seconds and start_lr non-negative");
  }
  if (start_gap > 0 && server.mode != ConsistencyMode::kAsync) {
    return absl::InvalidArgumentError(
        "start_gap needs mode async: a sync or staleness round would wait for the workers "
        "not yet started");
  }
  if (resume && checkpoint_path.empty()) {
    return absl::InvalidArgumentError("resume: needs a checkpoint path (the run directory)");
  }
  if (auto s = method_options.validate(); !s.ok()) return s;
  if (auto s = encode.validate(); !s.ok()) return s;
  return server.validate();
}

}  // namespace sparseps

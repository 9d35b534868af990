#pragma once
// A worker rank of the driver: trains on its shard of the training set through PsOptimizer,
// one push per batch, and appends a line per step to metrics.jsonl. At each epoch's end it
// sends its BN statistics to the servers. The first worker (rank == --servers) also writes
// config.json, prints the console progress, evaluates the servers' model (parameters and
// averaged BN statistics, pulled into a second model instance) every --eval-every epochs
// into eval.jsonl, and at the end writes summary.json from every worker's worker<k>.json.

#include <chrono>

#include "absl/status/status.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

absl::Status runWorkerRole(const DriverConfig& config,
                           std::chrono::steady_clock::time_point process_start);

}  // namespace sparseps

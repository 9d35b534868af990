#pragma once
// The server rank of the driver: builds the model from --seed (every shard the same), serves
// its shard of it (and, on shard 0, the BN buffers) until every worker is done, then writes
// its traffic counters to server.json (shard 0) or server<s>.json in the run directory.
// Shard 0 also keeps the run's records: config.json, the evaluations of its snapshots
// (eval.jsonl, off the training path) and, at the end, summary.json from every worker's
// report.

#include "absl/status/status.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

absl::Status runServerRole(const DriverConfig& config);

}  // namespace sparseps

#pragma once
// A worker rank of the driver: trains on its shard of the training set through a PsWorker
// (core/torch/ps_rank.h), one push per batch, and appends a line per step to
// metrics.jsonl. At each epoch's end it sends its BN statistics to the servers and saves
// its method state; at the end it writes its report, worker<k>.json. The first worker
// (rank == --servers) also prints the console progress, with the evaluations that server
// shard 0 appends to eval.jsonl.

#include <chrono>

#include "absl/status/status.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

// *trained says whether the worker got as far as training (it met the servers, loaded the
// model and its checkpoint): a failure before that is the job's, not this worker's alone.
absl::Status runWorkerRole(const DriverConfig& config,
                           std::chrono::steady_clock::time_point process_start, bool* trained);

}  // namespace sparseps

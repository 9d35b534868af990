#pragma once
// config.json: the resolved flags of a run, what the run really does where a method
// overrides a flag (dgs always replies with the dual-way sparse downlink, whatever
// --downlink says; DGC's warm-up densities never below the target), the git revision,
// the host, the model's size and the data set, and in virtual time the time model.

#include <cstdint>

#include "absl/status/status.h"
#include "core/runtime/job.h"
#include "experiments/datasets/dataset.h"
#include "experiments/driver/driver_config.h"
#include "experiments/driver/rank_setup.h"
#include "optim/method_registry.h"

namespace sparseps {

absl::Status writeRunConfig(const DriverConfig& config, const MethodRegistry& methods,
                            const JobSpec& job, const RankModel& model, const Dataset& dataset,
                            int64_t pushes_per_epoch);

}  // namespace sparseps

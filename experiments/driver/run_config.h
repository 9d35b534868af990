#pragma once
// config.json: the resolved flags of a run (DriverConfig::toJson: the downlink the method
// really replies with), DGC's warm-up densities as selected (never below the target), the
// git revision, the host, the model's size and the data set, and in virtual time the time
// model.

#include <cstdint>

#include "absl/status/status.h"
#include "core/runtime/job.h"
#include "experiments/datasets/dataset.h"
#include "experiments/driver/driver_config.h"
#include "experiments/driver/rank_setup.h"
#include "optim/method_registry.h"

namespace sparseps {

absl::Status writeRunConfig(const DriverConfig& config, const JobSpec& job,
                            const RankModel& model, const Dataset& dataset,
                            int64_t pushes_per_epoch);

}  // namespace sparseps

#pragma once
// The virtual clock's flags (--step-time, --step-jitter, --stragglers, --codec-time,
// --codec-scale) into DriverConfig::time: resolveDriverConfig (resolve_config.h) calls it.
// They mean something only with --clock=virtual, and are refused without it.

#include "absl/status/status.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

absl::Status resolveTimeModel(DriverConfig* config);

}  // namespace sparseps

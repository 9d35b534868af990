#pragma once
// Resolving a DriverConfig once its flags are parsed: --preset applied to the flags not
// given, the model's and data set's defaults, the time model, the checks of the flags'
// combination (each error names the flag and the fix), the derived fields filled in
// (bandwidth and latency parsed, the milestones, the job built once to check it), and the
// device.

#include <set>
#include <string>

#include "absl/status/status.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

// `given`: the flags on the command line (givenFlags).
absl::Status resolveDriverConfig(DriverConfig* config, const std::set<std::string>& given);

}  // namespace sparseps

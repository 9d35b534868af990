#pragma once
// --dry-run: every check a run depends on, in this one process, writing nothing: the flags
// (resolved, printed as config.json records them), the data (every example read, every
// Imagenette JPEG decoded), the model (one forward/backward of a real training batch and
// one evaluation batch), the method (a push and a reply through its worker and server rules
// on this model) and the memory each process of the job will need, from what this process
// measured on the way. A memory estimate above what the machine has is a warning, not an
// error: the figures are estimates.

#include "absl/status/status.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

absl::Status runDryRun(const DriverConfig& config);

}  // namespace sparseps

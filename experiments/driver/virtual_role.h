#pragma once
// The driver's --clock=virtual: the whole job of the config in this process, in simulated
// time (core/virtual/virtual_job.h), with the same run directory as a real run:
// config.json (and its time model), metrics.jsonl (simulated times), eval.jsonl, and
// summary.json (throughput in samples per simulated second, a staleness histogram, where
// the real time went and the peak memory).

#include "absl/status/status.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

absl::Status runVirtualRole(const DriverConfig& config);

}  // namespace sparseps

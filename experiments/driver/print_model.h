#pragma once
// --print-model: what the flags' model and data look like before any training, as JSON on
// stdout, for comparing them with another implementation (experiments/crosscheck-reference):
// each parameter tensor's name, shape and the mean and std of its initial values (seeded
// with --seed, as the server's initial model is), and the per-channel mean and std of the
// first test images as the model sees them (normalized, never augmented).

#include "absl/status/status.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

absl::Status printModel(const DriverConfig& config);

}  // namespace sparseps

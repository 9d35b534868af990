#pragma once
// --device: where a worker's model, its forward and backward passes and its method's
// worker rule run. cpu (the default) or cuda: the model on a GPU, the method's worker
// rule on its memory there (compressors/vector_ops.h), only what the push carries copied
// to the host. Servers and evaluation stay on the CPU.

#include <string>

#include "absl/status/status.h"
#include "c10/core/Device.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

// With the flags: cuda needs a GPU that LibTorch sees, a build with the CUDA kernels, the
// real clock and a method whose rule runs on a GPU's memory (Method::checkDeviceRule);
// each failure says what to do.
absl::Status checkDevice(const DriverConfig& config);

// This rank's device: the CPU for servers and with --device=cpu; with --device=cuda worker
// w takes GPU w mod the GPUs of its machine.
c10::Device rankDevice(const DriverConfig& config);

}  // namespace sparseps

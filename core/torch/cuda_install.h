#pragma once
// Installs compressors/cuda's kernels as the registry's device path
// (compressors/kernels/device_kernels.h), so a selector given device memory selects there. For
// GPU workers (core/torch/tensor_rules.h) and the Python package's CUDA tensors.

#include "absl/status/status.h"

namespace sparseps {

// Whether this build has the CUDA kernels (it was configured with the CUDA toolkit).
bool hasCudaKernels();

// Installs them once per process; FailedPrecondition, saying how to get them, in a build
// without them.
absl::Status installCudaKernels();

}  // namespace sparseps

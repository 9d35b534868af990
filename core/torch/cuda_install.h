#pragma once
// Installs compressors/cuda's kernels as the registry's device path
// (compressors/kernels/device_kernels.h), so a selector given device memory selects there,
// and gives GPU workers the vectors of their GPU (compressors/vector_ops.h), on which
// their method's worker rule runs. For GPU workers (core/torch/ps_rank.h) and the Python
// package's CUDA tensors.

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compressors/vector_ops.h"

namespace sparseps {

// Whether this build has the CUDA kernels (it was configured with the CUDA toolkit).
bool hasCudaKernels();

// Installs them once per process; FailedPrecondition, saying how to get them, in a build
// without them.
absl::Status installCudaKernels();

// A worker rule's VectorOps on GPU `device`, the kernels installed; installCudaKernels's
// error in a build without them.
absl::StatusOr<std::shared_ptr<const VectorOps>> gpuVectorOps(int device);

}  // namespace sparseps

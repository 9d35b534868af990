#include "core/torch/cuda_install.h"

#include <mutex>

#if SPARSEPS_HAVE_CUDA
#include "compressors/cuda/cuda_kernels.h"
#include "compressors/cuda/vector_ops_cuda.h"
#endif

namespace sparseps {

bool hasCudaKernels() { return SPARSEPS_HAVE_CUDA != 0; }

absl::Status installCudaKernels() {
#if SPARSEPS_HAVE_CUDA
  static std::once_flag once;
  std::call_once(once, [] { installDeviceKernels(gpu::makeCudaKernels()); });
  return absl::OkStatus();
#else
  return absl::FailedPreconditionError(
      "this build of sparseps has no CUDA kernels (CMake found no CUDA toolkit): install "
      "the toolkit (nvcc), configure a new build directory and build again");
#endif
}

absl::StatusOr<std::shared_ptr<const VectorOps>> gpuVectorOps([[maybe_unused]] int device) {
  if (absl::Status s = installCudaKernels(); !s.ok()) return s;
#if SPARSEPS_HAVE_CUDA
  return gpu::makeCudaVectorOps(device);
#else
  return absl::InternalError("unreachable: installCudaKernels succeeded without CUDA");
#endif
}

}  // namespace sparseps

#pragma once
// Turns a CUDA runtime error into an absl::Status that names the failed step, and checks
// that a segment fits the u32 indices the kernels use.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sparseps::gpu {

inline absl::Status cudaStatus(cudaError_t err, absl::string_view what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ")"));
}

inline absl::Status checkSegmentSize(size_t n) {
  if (n > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment of ", n, " elements exceeds the u32 index range"));
  }
  return absl::OkStatus();
}

// Returns the failure of a CUDA call, as a Status naming `what`, from the enclosing function.
#define SPARSEPS_CUDA_TRY(expr, what)                                              \
  if (absl::Status sparseps_status_ = ::sparseps::gpu::cudaStatus((expr), (what)); \
      !sparseps_status_.ok()) {                                                    \
    return sparseps_status_;                                                       \
  }

}  // namespace sparseps::gpu

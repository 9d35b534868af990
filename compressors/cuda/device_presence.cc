#include "compressors/cuda/device_presence.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sparseps::gpu {

bool cudaDevicePresent() {
  int count = 0;
  const bool present = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return present;
}

bool cudaDeviceRequired() {
  const char* v = std::getenv("SPARSEPS_REQUIRE_GPU");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

std::string cudaDeviceAbsence() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::StrCat(cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
  }
  return count > 0 ? "a CUDA device is present" : "no CUDA device";
}

}  // namespace sparseps::gpu

#include <cub/device/device_reduce.cuh>

#include "bench/cuda/read_pass.h"

namespace sparseps::gpu {

cudaError_t readPassDevice(const float* x, size_t n, float* out, DeviceScratch* scratch,
                           cudaStream_t stream) {
  size_t bytes = 0;
  cudaError_t err = cub::DeviceReduce::Max(nullptr, bytes, x, out, n, stream);
  void* temp = nullptr;
  if (err == cudaSuccess) err = scratch->reserve(bytes, &temp);
  if (err == cudaSuccess) err = cub::DeviceReduce::Max(temp, bytes, x, out, n, stream);
  return err;
}

}  // namespace sparseps::gpu

#include "compressors/cuda/device_scratch.h"

namespace sparseps::gpu {

DeviceScratch::~DeviceScratch() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

cudaError_t DeviceScratch::reserve(size_t bytes, void** ptr) {
  if (bytes > bytes_) {
    if (ptr_ != nullptr) {
      cudaError_t err = cudaFree(ptr_);
      ptr_ = nullptr;
      bytes_ = 0;
      if (err != cudaSuccess) return err;
    }
    cudaError_t err = cudaMalloc(&ptr_, bytes);
    if (err != cudaSuccess) {
      ptr_ = nullptr;
      return err;
    }
    bytes_ = bytes;
  }
  *ptr = ptr_;
  return cudaSuccess;
}

}  // namespace sparseps::gpu

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

PinnedBuffer::~PinnedBuffer() {
  if (used_ != nullptr) {
    cudaEventSynchronize(used_);
    cudaEventDestroy(used_);
  }
  if (ptr_ != nullptr) cudaFreeHost(ptr_);
}

cudaError_t PinnedBuffer::reserve(size_t bytes, void** ptr) {
  if (pending_) {
    if (cudaError_t err = cudaEventSynchronize(used_); err != cudaSuccess) return err;
    pending_ = false;
  }
  if (bytes > bytes_) {
    if (ptr_ != nullptr) {
      cudaError_t err = cudaFreeHost(ptr_);
      ptr_ = nullptr;
      bytes_ = 0;
      if (err != cudaSuccess) return err;
    }
    if (cudaError_t err = cudaMallocHost(&ptr_, bytes); err != cudaSuccess) {
      ptr_ = nullptr;
      return err;
    }
    bytes_ = bytes;
  }
  *ptr = ptr_;
  return cudaSuccess;
}

cudaError_t PinnedBuffer::markUsed(cudaStream_t stream) {
  if (used_ == nullptr) {
    if (cudaError_t err = cudaEventCreateWithFlags(&used_, cudaEventDisableTiming);
        err != cudaSuccess) {
      used_ = nullptr;
      return err;
    }
  }
  if (cudaError_t err = cudaEventRecord(used_, stream); err != cudaSuccess) return err;
  pending_ = true;
  return cudaSuccess;
}

}  // namespace sparseps::gpu

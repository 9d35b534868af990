#include "compressors/cuda/device_scratch.h"

#include <cstring>

namespace sparseps::gpu {

DeviceScratch::~DeviceScratch() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

namespace {

// Grows the block *ptr of *bytes to at least `wanted` bytes: frees it, then allocates anew
// (nothing to keep: it is scratch).
template <typename Allocate, typename Free>
cudaError_t grow(void** ptr, size_t* bytes, size_t wanted, Allocate allocate, Free free) {
  if (wanted <= *bytes) return cudaSuccess;
  if (*ptr != nullptr) {
    cudaError_t err = free(*ptr);
    *ptr = nullptr;
    *bytes = 0;
    if (err != cudaSuccess) return err;
  }
  if (cudaError_t err = allocate(ptr, wanted); err != cudaSuccess) {
    *ptr = nullptr;
    return err;
  }
  *bytes = wanted;
  return cudaSuccess;
}

}  // namespace

cudaError_t DeviceScratch::reserve(size_t bytes, void** ptr) {
  cudaError_t err = grow(
      &ptr_, &bytes_, bytes, [](void** p, size_t n) { return cudaMalloc(p, n); }, cudaFree);
  *ptr = ptr_;
  return err;
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
  cudaError_t err = grow(
      &ptr_, &bytes_, bytes, [](void** p, size_t n) { return cudaMallocHost(p, n); }, cudaFreeHost);
  *ptr = ptr_;
  return err;
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

cudaError_t PinnedBuffer::upload(std::initializer_list<HostTable> tables, cudaStream_t stream) {
  size_t bytes = 0;
  for (const HostTable& t : tables) bytes += t.bytes;
  if (bytes == 0) return cudaSuccess;
  void* pinned = nullptr;
  if (cudaError_t err = reserve(bytes, &pinned); err != cudaSuccess) return err;
  auto* at = static_cast<char*>(pinned);
  for (const HostTable& t : tables) {
    if (t.bytes == 0) continue;
    std::memcpy(at, t.host, t.bytes);
    if (cudaError_t err = cudaMemcpyAsync(t.device, at, t.bytes, cudaMemcpyHostToDevice, stream);
        err != cudaSuccess) {
      return err;
    }
    at += t.bytes;
  }
  return markUsed(stream);
}

}  // namespace sparseps::gpu

#pragma once
// DeviceScratch: one growable block of device memory that the CUDA kernels carve their
// temporaries from (histograms, candidate buffers, CUB temp storage), so repeated calls
// on the same stream do not allocate. Not thread-safe: one per stream.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <initializer_list>

namespace sparseps::gpu {

class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  // Sets *ptr to at least `bytes` of device memory. Growing frees the old block
  // (cudaFree waits for the device), so earlier work that used it has finished.
  cudaError_t reserve(size_t bytes, void** ptr);

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Host bytes and where they go in device memory.
struct HostTable {
  const void* host;
  void* device;
  size_t bytes;
};

// PinnedBuffer: one growable block of pinned host memory that copies to and from the
// device go through, so they run asynchronously on their stream (a copy from pageable
// memory waits for the device). Before the block is handed out again, reserve waits for
// the copies marked as using it. Not thread-safe: one per stream.
class PinnedBuffer {
 public:
  // Copies the tables through the block to the device on `stream`, marked as using it:
  // the host tables may change as soon as this returns.
  cudaError_t upload(std::initializer_list<HostTable> tables, cudaStream_t stream);
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // Sets *ptr to at least `bytes` of pinned host memory, once the marked copies are done.
  cudaError_t reserve(size_t bytes, void** ptr);
  // Marks the copies enqueued so far on `stream` as using the block.
  cudaError_t markUsed(cudaStream_t stream);

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  cudaEvent_t used_ = nullptr;
  bool pending_ = false;
};

// Carves aligned arrays out of one block; with base == nullptr it only measures.
class ScratchCarver {
 public:
  explicit ScratchCarver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(size_t count) {
    size_t at = (used_ + kAlign - 1) / kAlign * kAlign;
    used_ = at + count * sizeof(T);
    return base_ == nullptr ? nullptr : reinterpret_cast<T*>(base_ + at);
  }
  size_t used() const { return used_; }

 private:
  static constexpr size_t kAlign = 256;
  char* base_;
  size_t used_ = 0;
};

}  // namespace sparseps::gpu

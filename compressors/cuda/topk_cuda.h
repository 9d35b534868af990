#pragma once
// Magnitude top-k of one segment in device memory, on a CUDA stream: the topk(x, r) of
// docs/methods.md with the contract of compressors/topk.h (indices increasing with
// their values; NaN above Inf above finite; equal magnitudes -> the lower index wins).
//  - topkRadixDevice: radix select over the magnitude keys (topk_radix.cu): five reads of
//    x (three histogram passes, a count and a write by chunks), no host round trip.
//  - topkSortDevice: the baseline, cub::DeviceRadixSort of all keys (topk_sort.cu).
// x, indices and values are device pointers; indices/values hold min(k, n) entries.
// The work is enqueued on `stream` and the call returns without waiting for it.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "compressors/cuda/device_scratch.h"

namespace sparseps::gpu {

// Both return the number of entries written, min(k, n); n must be < 2^32.
absl::StatusOr<size_t> topkRadixDevice(const float* x, size_t n, size_t k, uint32_t* indices,
                                       float* values, DeviceScratch* scratch, cudaStream_t stream);
absl::StatusOr<size_t> topkSortDevice(const float* x, size_t n, size_t k, uint32_t* indices,
                                      float* values, DeviceScratch* scratch, cudaStream_t stream);

}  // namespace sparseps::gpu

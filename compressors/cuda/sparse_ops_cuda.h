#pragma once
// Applying and packing sparse updates in device memory, with the semantics of
// compressors/apply.h:
//   scatterAddDevice: dst[indices[j]] += scale * values[j]   (indices unique, < numel)
//   axpyDevice:       y += a * x
//   packPairsDevice:  the wire format's index/value pair layout, 8 B per nonzero:
//                     pairs[2j] = indices[j], pairs[2j + 1] = the bits of values[j]
//                     (little-endian on every CUDA device, as the wire format is).
// All arrays are device pointers; the work is enqueued on `stream`.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace sparseps::gpu {

absl::Status scatterAddDevice(const uint32_t* indices, const float* values, size_t count,
                              float scale, float* dst, cudaStream_t stream);

absl::Status axpyDevice(float a, const float* x, size_t n, float* y, cudaStream_t stream);

// pairs: room for 2 * count u32.
absl::Status packPairsDevice(const uint32_t* indices, const float* values, size_t count,
                             uint32_t* pairs, cudaStream_t stream);

}  // namespace sparseps::gpu

#pragma once
// topkAuto: magnitude top-k of a segment wherever it lives. cudaPointerGetAttributes
// decides: device or managed memory -> the radix top-k on the GPU (topk_cuda.h), then the
// k results are copied to the host; host memory (also when no CUDA device or driver is
// present) -> topkExact on the CPU (compressors/topk.h). Both give the same result: indices
// increasing with their values, equal magnitudes -> the lower index.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "compressors/cuda/device_scratch.h"

namespace sparseps::gpu {

enum class MemorySide { kHost, kDevice };

MemorySide memorySideOf(const void* p);

// Fills indices/values (host vectors) with the min(k, n) largest |x|. The device path
// synchronizes `stream`; scratch is only used there.
absl::Status topkAuto(const float* x, size_t n, size_t k, std::vector<uint32_t>* indices,
                      std::vector<float>* values, DeviceScratch* scratch, cudaStream_t stream);

}  // namespace sparseps::gpu

#pragma once
// The device baseline of bench_cuda_topk: one pass that reads n floats and reduces them
// to their maximum (cub::DeviceReduce::Max), the least any kernel that looks at every
// element of a segment can cost. *out is a device float; the work is enqueued on `stream`.

#include <cuda_runtime_api.h>

#include <cstddef>

#include "compressors/cuda/device_scratch.h"

namespace sparseps::gpu {

cudaError_t readPassDevice(const float* x, size_t n, float* out, DeviceScratch* scratch,
                           cudaStream_t stream);

}  // namespace sparseps::gpu

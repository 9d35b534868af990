#pragma once
// VectorOps (compressors/vector_ops.h) on one GPU: vectors in its memory (cudaMalloc), the
// kernels of vector_ops.cu on its legacy default stream (the stream LibTorch's default
// stream is, so a model's gradient is complete before the rule reads it), host indices
// and values copied over through buffers the instance keeps. A CUDA failure ends the
// process with the step named (compressors/kernels/device_kernels.h's requireDeviceOk):
// a worker rule has no way to recover from a device fault.

#include <memory>

#include "compressors/vector_ops.h"

namespace sparseps::gpu {

// For GPU `device` (its index among the visible ones). Not thread-safe: one rule's thread.
std::shared_ptr<const VectorOps> makeCudaVectorOps(int device);

}  // namespace sparseps::gpu

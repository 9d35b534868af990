#pragma once
// The CUDA kernels behind the registry's selection compressors (compressors/device_kernels.h):
// the radix top-k, the threshold filter and DGC's sampled threshold of this folder, run on
// the legacy default stream (ordered with a framework's work on it, as PyTorch's default
// stream is), one call at a time, with the selection copied back to host vectors. Install
// them with installDeviceKernels(makeCudaKernels()); without a device or driver, every
// pointer reads as host memory and the CPU loops run.

#include <memory>

#include "compressors/device_kernels.h"

namespace sparseps::gpu {

std::unique_ptr<DeviceKernels> makeCudaKernels();

}  // namespace sparseps::gpu

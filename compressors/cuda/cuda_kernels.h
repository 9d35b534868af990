#pragma once
// The CUDA kernels behind the registry's selection compressors (compressors/kernels/device_kernels.h):
// the radix top-k, the threshold filter and DGC's sampled threshold of this folder. Each
// call makes the input's device current, waits for the work queued on that device (the
// input may come from any of a framework's streams), runs on its legacy default stream
// with buffers kept per device, and copies the selection back to host vectors; one call
// at a time. Install them with installDeviceKernels(makeCudaKernels()); without a device
// or driver, every pointer reads as host memory and the CPU loops run.

#include <memory>

#include "compressors/kernels/device_kernels.h"

namespace sparseps::gpu {

std::unique_ptr<DeviceKernels> makeCudaKernels();

}  // namespace sparseps::gpu

#pragma once
// Whether this process can use a CUDA device, for the code that runs kernels only where one
// is present (the device tests, bench_cuda_topk). SPARSEPS_REQUIRE_GPU=1 in the environment
// says a device must be there (scripts/gpu-check sets it on a GPU machine): then a missing
// device is a failure instead of a skip, so a broken driver cannot pass as "no GPU".

#include <string>

namespace sparseps::gpu {

// True when the runtime finds at least one device; clears the error it may leave.
bool cudaDevicePresent();

// True when SPARSEPS_REQUIRE_GPU is set to 1.
bool cudaDeviceRequired();

// Why there is no device: the runtime's error name and text, or "no CUDA device".
std::string cudaDeviceAbsence();

}  // namespace sparseps::gpu

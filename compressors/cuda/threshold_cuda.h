#pragma once
// Threshold selection on device memory, with the semantics of compressors/threshold.h:
//  - thresholdFilterDevice: every i with |x[i]| >= |thr| (magnitudeKey order: NaN above
//    Inf, -0 == +0), indices increasing, one cub::DeviceSelect pass.
//  - sampledThresholdDevice: DGC's sampled threshold (Lin et al., "Deep Gradient
//    Compression", ICLR 2018) as docs/methods.md states it: sample ~1% with a random
//    start and a stride, thr = min of the top ceil(samples * r) of |sample|, keep
//    |x| >= thr; more than 1.3k pass: exact top-k among them; fewer than 0.8k: thr *= 0.8;
//    at most 10 rounds, then the first k by index. Same sample (start from random_bits),
//    same rounds and the same result as sampledThreshold() on the CPU. The kernels run
//    on the device; the host reads one count per round to decide the next, so this call
//    synchronizes `stream`.
// All arrays are device pointers.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "compressors/cuda/device_scratch.h"
#include "compressors/threshold.h"

namespace sparseps::gpu {

// indices/values: room for n entries. Returns how many were written (synchronizes).
absl::StatusOr<size_t> thresholdFilterDevice(const float* x, size_t n, float thr, uint32_t* indices,
                                             float* values, DeviceScratch* scratch,
                                             cudaStream_t stream);

// indices/values: room for topkCount(n, density) entries.
absl::StatusOr<SampledThresholdResult> sampledThresholdDevice(
    const float* x, size_t n, double density, uint64_t random_bits, uint32_t* indices,
    float* values, DeviceScratch* scratch, cudaStream_t stream,
    const SampledThresholdOptions& options = {});

}  // namespace sparseps::gpu

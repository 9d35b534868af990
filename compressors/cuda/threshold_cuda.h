#pragma once
// Threshold selection on device memory, with the semantics of compressors/threshold.h:
//  - thresholdFilterDevice: every i with |x[i]| >= |thr| (magnitudeKey order: NaN above
//    Inf, -0 == +0), indices increasing, one cub::DeviceSelect pass.
//  - SegmentedSampledThreshold: DGC's sampled threshold (Lin et al., "Deep Gradient
//    Compression", ICLR 2018) of many segments of one flat x at once, as sampled_plan.h
//    lays it out: the same sample, rounds and result as sampledThreshold() on the CPU gives
//    each segment, in a fixed number of launches and two waits for the device whatever
//    the number of segments.
// All arrays are device pointers.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/sampled_plan.h"
#include "compressors/cuda/topk_cuda.h"

namespace sparseps::gpu {

// indices/values: room for n entries. Returns how many were written (synchronizes).
absl::StatusOr<size_t> thresholdFilterDevice(const float* x, size_t n, float thr, uint32_t* indices,
                                             float* values, DeviceScratch* scratch,
                                             cudaStream_t stream);

// Not thread-safe, and one per stream: calls share its device memory.
class SegmentedSampledThreshold {
 public:
  // Selects from x (device memory of xSize floats) into indices and values, which hold room
  // for the sum of the requests' topkCount(n, density): request i's indices (within its
  // segment, increasing) with their values in slots [plan().first(i), plan().first(i) +
  // plan().count(i)), its result plan().result(i). Waits for the device twice (for each
  // segment's sample threshold, and for the rounds' counts), then enqueues the selection
  // on `stream` and returns without waiting for it. Requests that lie outside x or overlap,
  // or options the device does not play, are an InvalidArgument error.
  absl::Status select(const float* x, size_t xSize, const std::vector<SampledRequest>& requests,
                      const SampledThresholdOptions& options, uint32_t* indices, float* values,
                      cudaStream_t stream);
  const SampledPlan& plan() const { return plan_; }

 private:
  SampledPlan plan_;
  SegmentedTopk sample_tops_;  // the thresholds from the samples
  SegmentedTopk exact_tops_;   // the segments whose rule ends in the exact branch
  DeviceScratch sampling_;     // steps 1 and 2's device memory
  DeviceScratch filtering_;    // step 3's
  PinnedBuffer read_back_;     // the samples' selected values, then the rounds' counts
  PinnedBuffer staging_;       // the tables on their way to the device
};

}  // namespace sparseps::gpu

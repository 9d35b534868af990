#pragma once
// Magnitude top-k of one segment in device memory, on a CUDA stream: the topk(x, r) of
// docs/methods.md with the contract of compressors/topk.h (indices increasing with
// their values; NaN above Inf above finite; equal magnitudes -> the lower index wins).
//  - topkRadixDevice: radix select over the magnitude keys (topk_radix.cu): two reads of x
//    (pass 0, and pass 1 keeping the survivors that can still be selected), then pass 2,
//    a count and a write by chunks over the survivors; no host round trip.
//  - topkSortDevice: the baseline, cub::DeviceRadixSort of all keys (topk_sort.cu).
//  - SegmentedTopk: the radix select of many segments of one flat vector at once
//    (segment_plan.h), six launches whatever the number of segments.
// x, indices and values are device pointers; indices/values hold min(k, n) entries.
// The work is enqueued on `stream` and the call returns without waiting for it.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/segment_plan.h"

namespace sparseps::gpu {

// Both return the number of entries written, min(k, n); n must be < 2^32.
absl::StatusOr<size_t> topkRadixDevice(const float* x, size_t n, size_t k, uint32_t* indices,
                                       float* values, DeviceScratch* scratch, cudaStream_t stream);
absl::StatusOr<size_t> topkSortDevice(const float* x, size_t n, size_t k, uint32_t* indices,
                                      float* values, DeviceScratch* scratch, cudaStream_t stream);

// The top-k of every segment of a step at once. The plan is made, and copied to the device,
// when the requests differ from the last call's (a step's layout is the same every step).
// Not thread-safe, and one per stream: calls share the device memory of the plan.
class SegmentedTopk {
 public:
  // Enqueues the selection from x (device memory of xSize floats) on `stream` and returns
  // without waiting for it: request i's indices (within its segment, increasing) with their
  // values in slots [plan().first[i], plan().first[i] + plan().count[i]) of indices and
  // values, which hold plan().total entries. A request outside x or beyond the u32 index
  // range is an InvalidArgument error; after any error the next call plans again.
  absl::Status select(const float* x, size_t xSize, const std::vector<SegmentRequest>& requests,
                      uint32_t* indices, float* values, cudaStream_t stream);
  // The plan of the last call that succeeded.
  const SegmentPlan& plan() const { return plan_; }

 private:
  absl::Status replan(const std::vector<SegmentRequest>& requests, size_t xSize,
                      cudaStream_t stream);

  std::vector<SegmentRequest> requests_;  // what plan_ and the device's copy were made for
  bool planned_ = false;                  // requests_ is planned and on the device
  uint64_t extent_ = 0;                   // the floats of x its segments reach
  SegmentPlan plan_;
  DeviceScratch scratch_;
  PinnedBuffer staging_;  // the plan on its way to the device
  void* temp_ = nullptr;
};

}  // namespace sparseps::gpu

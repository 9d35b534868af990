#pragma once
// Internal to compressors/cuda: the host-side launchers of the .cu files. They only
// enqueue work on `stream`; the public functions (topk_cuda.h, sparse_ops_cuda.h)
// validate arguments and carve `temp` (device memory of at least the *TempBytes size)
// from a DeviceScratch. All pointers are device pointers.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/radix_digits.h"
#include "compressors/cuda/sampled_plan.h"
#include "compressors/cuda/segment_plan.h"

namespace sparseps::gpu {

// select_indices.cu: writes, in increasing order, every i < n whose magnitudeKey(x[i]) is
// >= keyMin; *count on the device.
size_t selectIndicesTempBytes(uint32_t n);
cudaError_t launchSelectIndices(const float* x, uint32_t n, uint32_t keyMin, uint32_t* out,
                                uint32_t* count, void* temp, cudaStream_t stream);

// topk_radix.cu. Requires 1 <= k <= n.
// The three radix passes alone: leave in *state the k-th largest key (prefix) and the
// number of elements with that key to take (kLeft). hist: kBuckets u32.
cudaError_t launchRadixPasses(const float* x, uint32_t n, uint32_t k, RadixState* state,
                              uint32_t* hist, cudaStream_t stream);
size_t topkRadixTempBytes(uint32_t n);
cudaError_t launchTopkRadix(const float* x, uint32_t n, uint32_t k, uint32_t* indices,
                            float* values, void* temp, cudaStream_t stream);
// The segmented top-k of a plan (segment_plan.h) with entries: uploadSegmentPlan copies the
// plan into temp through `staging` (so the copy queues without waiting for the stream),
// then each launchSegmentedTopk with the same temp selects from x into the plan's output
// slots.
size_t segmentedTopkTempBytes(const SegmentPlan& plan);
cudaError_t uploadSegmentPlan(const SegmentPlan& plan, void* temp, PinnedBuffer* staging,
                              cudaStream_t stream);
cudaError_t launchSegmentedTopk(const float* x, const SegmentPlan& plan, uint32_t* indices,
                                float* values, void* temp, cudaStream_t stream);

// topk_sort.cu: the cub::DeviceRadixSort baseline. Requires 1 <= k <= n.
size_t topkSortTempBytes(uint32_t n, uint32_t k);
cudaError_t launchTopkSort(const float* x, uint32_t n, uint32_t k, uint32_t* indices, float* values,
                           void* temp, cudaStream_t stream);

// sparse_ops.cu.
cudaError_t launchGather(const float* x, const uint32_t* indices, uint32_t count, float* values,
                         cudaStream_t stream);
// Every i with magnitudeKey(x[i]) >= magnitudeKey(thr), increasing; *count on the device.
size_t thresholdFilterTempBytes(uint32_t n);
cudaError_t launchThresholdFilter(const float* x, uint32_t n, float thr, uint32_t* indices,
                                  float* values, uint32_t* count, void* temp, cudaStream_t stream);
cudaError_t launchScatterAdd(const uint32_t* indices, const float* values, uint32_t count,
                             float alpha, float* y, cudaStream_t stream);
cudaError_t launchAxpy(float alpha, const float* x, uint32_t n, float* y, cudaStream_t stream);
cudaError_t launchPackPairs(const uint32_t* indices, const float* values, uint32_t count,
                            uint32_t* pairs, cudaStream_t stream);

// sampled_segments.cu: the steps of sampled_plan.h, over `count` entries in device memory
// planned with `blocks` blocks in all (block_plan.h). launchLadderCounts zeroes counts
// (kMaxSampledRounds per entry) first. launchSegmentFilter writes, increasing, every i < n
// its entries keep, and their number to *selected.
cudaError_t launchSegmentedSample(const float* x, const SampleEntry* entries, uint32_t count,
                                  uint32_t blocks, float* sample, cudaStream_t stream);
cudaError_t launchLadderCounts(const float* x, const LadderEntry* entries, uint32_t count,
                               uint32_t blocks, uint32_t* counts, cudaStream_t stream);
size_t segmentFilterTempBytes(uint32_t n);
cudaError_t launchSegmentFilter(const float* x, uint32_t n, const FilterEntry* entries,
                                uint32_t count, uint32_t* out, uint32_t* selected, void* temp,
                                cudaStream_t stream);
cudaError_t launchPlaceSelected(const float* x, const uint32_t* filtered, const PlaceEntry* entries,
                                uint32_t count, uint32_t blocks, uint32_t* indices, float* values,
                                cudaStream_t stream);

// vector_ops.cu: VectorOps' element-wise kernels (compressors/vector_ops.h); n and count
// may be 0. accumulate: y = a * y + b * (g + wd * w), or with fold y = b * (g + wd * w).
cudaError_t launchAccumulate(float* y, float a, float b, const float* g, const float* w, float wd,
                             size_t n, bool fold, cudaStream_t stream);
cudaError_t launchCombine(float* out, float a, const float* x, float b, const float* z, size_t n,
                          cudaStream_t stream);
cudaError_t launchScale(float* y, float a, size_t n, cudaStream_t stream);
// *sum (device) = sum of (g + wd * w)^2.
cudaError_t launchSumSquares(const float* g, const float* w, float wd, size_t n, double* sum,
                             cudaStream_t stream);
cudaError_t launchScaleAt(float* y, const uint32_t* idx, uint32_t count, float a,
                          cudaStream_t stream);
cudaError_t launchFillAt(float* y, const uint32_t* idx, uint32_t count, float value,
                         cudaStream_t stream);
cudaError_t launchSetAt(float* y, const uint32_t* idx, const float* values, uint32_t count,
                        cudaStream_t stream);
// Many spans in one launch (a step's segments, copies or dense writes):
//   y[j] = a * y[j] + b * (g[j] + wd * w[j]),  j < n,
// where a == 0 writes y without reading it and wd == 0 does not read w. The updates, planned
// with planBlocks by n (block_plan.h, n >= 1), lie in device memory; `blocks` is the total.
struct SpanUpdate {
  float* y = nullptr;
  const float* g = nullptr;
  const float* w = nullptr;
  uint32_t n = 0;
  float b = 0.0f;
  uint32_t firstBlock = 0;
  uint32_t blocks = 0;
};
cudaError_t launchSpanUpdates(const SpanUpdate* updates, uint32_t count, uint32_t blocks, float a,
                              float wd, cudaStream_t stream);

}  // namespace sparseps::gpu

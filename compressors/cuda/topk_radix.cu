// Magnitude top-k by radix select on the device (radix_digits.h explains the digits).
// Per pass, one kernel fuses the filter (key matches the prefix chosen so far) with a
// shared-memory histogram of the next 11-bit digit; blocks add their histogram to a
// global one, and the last block to finish scans it and advances the RadixState in
// device memory, so the passes follow each other with no host round trip. Then
// a stable compaction (select_indices.cu, cub::DeviceSelect) collects the ties
// (key == T) to find the tie cut, and then the selected indices in increasing order.

#include <cub/block/block_scan.cuh>

#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kBucketsPerThread = kBuckets / kThreads;
constexpr uint32_t kItemsPerBlock = kThreads * 16;
constexpr uint32_t kMaxBlocks = 1024;

__global__ void initStateKernel(RadixState* state, uint32_t* hist, uint32_t k) {
  for (int b = threadIdx.x; b < kBuckets; b += blockDim.x) hist[b] = 0;
  if (threadIdx.x == 0) {
    RadixState s;
    s.kLeft = k;
    *state = s;
  }
}

__global__ void __launch_bounds__(kThreads)
    radixPassKernel(const float* __restrict__ x, uint32_t n, int pass, RadixState* state,
                    uint32_t* hist) {
  using BlockScan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ uint32_t local[kBuckets];
  __shared__ typename BlockScan::TempStorage scanTemp;
  __shared__ bool isLast;
  __shared__ uint32_t target, targetAbove;

  const RadixState s = *state;
  for (int b = threadIdx.x; b < kBuckets; b += kThreads) local[b] = 0;
  __syncthreads();
  for (size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * kThreads) {
    const uint32_t key = magnitudeKey(x[i]);
    if (matchesPrefix(key, s)) atomicAdd(&local[digitOf(key, pass)], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBuckets; b += kThreads) {
    if (local[b] != 0) atomicAdd(&hist[b], local[b]);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) isLast = atomicAdd(&state->blocksDone, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!isLast) return;

  // Last block: exclusive scan from the highest digit down, one test per bucket.
  __threadfence();
  uint32_t count[kBucketsPerThread], above[kBucketsPerThread];
  for (int j = 0; j < kBucketsPerThread; ++j) {
    const int d = kBuckets - 1 - (threadIdx.x * kBucketsPerThread + j);
    count[j] = __ldcg(&hist[d]);
    hist[d] = 0;  // ready for the next pass
  }
  BlockScan(scanTemp).ExclusiveSum(count, above);
  for (int j = 0; j < kBucketsPerThread; ++j) {
    if (isTargetBucket(above[j], count[j], s.kLeft)) {
      target = kBuckets - 1 - (threadIdx.x * kBucketsPerThread + j);
      targetAbove = above[j];
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    RadixState next = s;
    advanceState(&next, pass, target, targetAbove);
    next.blocksDone = 0;
    *state = next;
  }
}

__global__ void tieCutKernel(RadixState* state, const uint32_t* ties) {
  state->cutIndex = ties[state->kLeft - 1];
}

// The layout of temp, measured when temp == nullptr.
struct RadixTemp {
  RadixState* state;
  uint32_t* hist;
  uint32_t* ties;
  uint32_t* selected;
  void* select;
  size_t total;
};

RadixTemp layoutRadixTemp(uint32_t n, void* temp) {
  RadixTemp t{};
  ScratchCarver carver(temp);
  t.state = carver.take<RadixState>(1);
  t.hist = carver.take<uint32_t>(kBuckets);
  t.ties = carver.take<uint32_t>(n);
  t.selected = carver.take<uint32_t>(1);
  t.select = carver.take<char>(selectIndicesTempBytes(n));
  t.total = carver.used();
  return t;
}

}  // namespace

cudaError_t launchRadixPasses(const float* x, uint32_t n, uint32_t k, RadixState* state,
                              uint32_t* hist, cudaStream_t stream) {
  initStateKernel<<<1, kThreads, 0, stream>>>(state, hist, k);
  uint32_t blocks = (n + kItemsPerBlock - 1) / kItemsPerBlock;
  blocks = blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks);
  for (int pass = 0; pass < kRadixPasses; ++pass) {
    radixPassKernel<<<blocks, kThreads, 0, stream>>>(x, n, pass, state, hist);
  }
  return cudaGetLastError();
}

size_t topkRadixTempBytes(uint32_t n) { return layoutRadixTemp(n, nullptr).total; }

cudaError_t launchTopkRadix(const float* x, uint32_t n, uint32_t k, uint32_t* indices,
                            float* values, void* temp, cudaStream_t stream) {
  const RadixTemp t = layoutRadixTemp(n, temp);
  cudaError_t err = launchRadixPasses(x, n, k, t.state, t.hist, stream);
  if (err != cudaSuccess) return err;
  err =
      launchSelectIndices(x, n, SelectMode::kTie, 0, t.state, t.ties, t.selected, t.select, stream);
  if (err != cudaSuccess) return err;
  tieCutKernel<<<1, 1, 0, stream>>>(t.state, t.ties);
  err = launchSelectIndices(x, n, SelectMode::kSelected, 0, t.state, indices, t.selected, t.select,
                            stream);
  if (err != cudaSuccess) return err;
  return launchGather(x, indices, k, values, stream);
}

}  // namespace sparseps::gpu

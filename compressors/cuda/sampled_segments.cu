// The kernels of DGC's sampled threshold over many segments at once (sampled_plan.h): the
// strided sample of every segment, the count of what reaches each round's threshold, the
// filter at each segment's last threshold, and the placing of its first k. Each but the
// filter runs the blocks of all segments in one 1-D grid (block_plan.h).

#include <thrust/iterator/counting_iterator.h>

#include <cub/device/device_select.cuh>

#include "compressors/cuda/block_plan.h"
#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

// Over the span [0, n) of the entry e that holds this block, with e's other blocks.
#define SPARSEPS_ENTRY_STRIDE(j, e, n)                                                         \
  for (size_t j = static_cast<size_t>(blockIdx.x - (e).firstBlock) * blockDim.x + threadIdx.x; \
       j < (n); j += static_cast<size_t>((e).blocks) * blockDim.x)

__global__ void sampleKernel(const float* __restrict__ x, const SampleEntry* __restrict__ entries,
                             uint32_t count, float* sample) {
  const SampleEntry e = entries[entryOfBlock(entries, count, blockIdx.x)];
  const float* from = x + e.offset + e.start;
  SPARSEPS_ENTRY_STRIDE(j, e, e.count) sample[e.at + j] = from[j * e.stride];
}

// Each thread counts in registers what reaches each round's key (a compare per round: the
// keys need not be ordered); the block adds its warps' sums, then adds them to the entry's.
__global__ void ladderCountKernel(const float* __restrict__ x,
                                  const LadderEntry* __restrict__ entries, uint32_t count,
                                  uint32_t* counts) {
  __shared__ uint32_t reached[kMaxSampledRounds];
  const uint32_t at = entryOfBlock(entries, count, blockIdx.x);
  const LadderEntry& e = entries[at];
  const uint32_t rounds = e.rounds;
  uint32_t keys[kMaxSampledRounds];
  uint32_t mine[kMaxSampledRounds];
#pragma unroll
  for (uint32_t r = 0; r < kMaxSampledRounds; ++r) {
    keys[r] = r < rounds ? e.keys[r] : 0xffffffffu;  // a round not played: no key reaches it
    mine[r] = 0;
  }
  if (threadIdx.x < kMaxSampledRounds) reached[threadIdx.x] = 0;
  __syncthreads();
  const float* from = x + e.offset;
  SPARSEPS_ENTRY_STRIDE(j, e, e.n) {
    const uint32_t key = magnitudeKey(from[j]);
#pragma unroll
    for (uint32_t r = 0; r < kMaxSampledRounds; ++r) mine[r] += key >= keys[r] ? 1u : 0u;
  }
#pragma unroll
  for (uint32_t r = 0; r < kMaxSampledRounds; ++r) {
    uint32_t sum = mine[r];
    for (int delta = 16; delta > 0; delta /= 2) sum += __shfl_down_sync(0xffffffffu, sum, delta);
    if ((threadIdx.x & 31) == 0 && sum > 0) atomicAdd(&reached[r], sum);
  }
  __syncthreads();
  if (threadIdx.x < rounds && reached[threadIdx.x] > 0) {
    atomicAdd(&counts[at * kMaxSampledRounds + threadIdx.x], reached[threadIdx.x]);
  }
}

// Whether element i lies in a filter entry and reaches its key: the last entry that starts
// at or before i, found by bisection.
struct InFilteredSegment {
  const float* x;
  const FilterEntry* entries;
  uint32_t count;
  __device__ bool operator()(uint32_t i) const {
    uint32_t lo = 0, hi = count;
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (entries[mid].offset <= i) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo == 0) return false;
    const FilterEntry& e = entries[lo - 1];
    return i < e.end && magnitudeKey(x[i]) >= e.keyMin;
  }
};

using Counting = thrust::counting_iterator<uint32_t>;

__global__ void placeKernel(const float* __restrict__ x, const uint32_t* __restrict__ filtered,
                            const PlaceEntry* __restrict__ entries, uint32_t count,
                            uint32_t* indices, float* values) {
  const PlaceEntry e = entries[entryOfBlock(entries, count, blockIdx.x)];
  SPARSEPS_ENTRY_STRIDE(j, e, e.count) {
    const uint32_t i = filtered[e.from + j];
    indices[e.out + j] = static_cast<uint32_t>(i - e.offset);
    values[e.out + j] = x[i];
  }
}

}  // namespace

cudaError_t launchSegmentedSample(const float* x, const SampleEntry* entries, uint32_t count,
                                  uint32_t blocks, float* sample, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  sampleKernel<<<blocks, kBlockThreads, 0, stream>>>(x, entries, count, sample);
  return cudaGetLastError();
}

cudaError_t launchLadderCounts(const float* x, const LadderEntry* entries, uint32_t count,
                               uint32_t blocks, uint32_t* counts, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  cudaError_t err = cudaMemsetAsync(
      counts, 0, static_cast<size_t>(count) * kMaxSampledRounds * sizeof(uint32_t), stream);
  if (err != cudaSuccess) return err;
  ladderCountKernel<<<blocks, kBlockThreads, 0, stream>>>(x, entries, count, counts);
  return cudaGetLastError();
}

size_t segmentFilterTempBytes(uint32_t n) {
  size_t bytes = 0;
  if (cub::DeviceSelect::If(nullptr, bytes, Counting(0), static_cast<uint32_t*>(nullptr),
                            static_cast<uint32_t*>(nullptr), n, InFilteredSegment{},
                            cudaStream_t{}) != cudaSuccess) {
    return 0;
  }
  return bytes;
}

cudaError_t launchSegmentFilter(const float* x, uint32_t n, const FilterEntry* entries,
                                uint32_t count, uint32_t* out, uint32_t* selected, void* temp,
                                cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  size_t bytes = segmentFilterTempBytes(n);
  return cub::DeviceSelect::If(temp, bytes, Counting(0), out, selected, n,
                               InFilteredSegment{x, entries, count}, stream);
}

cudaError_t launchPlaceSelected(const float* x, const uint32_t* filtered, const PlaceEntry* entries,
                                uint32_t count, uint32_t blocks, uint32_t* indices, float* values,
                                cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  placeKernel<<<blocks, kBlockThreads, 0, stream>>>(x, filtered, entries, count, indices, values);
  return cudaGetLastError();
}

}  // namespace sparseps::gpu

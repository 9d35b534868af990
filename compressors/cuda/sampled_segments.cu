// The kernels of DGC's sampled threshold over many segments at once (sampled_plan.h): the
// strided sample of every segment, the count of what passes each round's threshold, the
// filter at each segment's last threshold, and the placing of its first k. Each but the
// filter runs one row of blocks per segment (blockIdx.y), striding over the segment.

#include <thrust/iterator/counting_iterator.h>

#include <cub/device/device_select.cuh>

#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

constexpr uint32_t kThreads = 256;
constexpr uint32_t kMaxBlocksPerRow = 256;

// Blocks per segment for the longest one's `longest` elements.
dim3 rowsGrid(uint32_t longest, uint32_t entries) {
  uint32_t blocks = (longest + kThreads - 1) / kThreads;
  blocks = blocks == 0 ? 1 : (blocks > kMaxBlocksPerRow ? kMaxBlocksPerRow : blocks);
  return dim3(blocks, entries);
}

#define SPARSEPS_ROW_STRIDE(j, n) \
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < (n); j += gridDim.x * blockDim.x)

__global__ void sampleKernel(const float* __restrict__ x, const SampleEntry* __restrict__ entries,
                             float* sample) {
  const SampleEntry e = entries[blockIdx.y];
  const float* from = x + e.offset + e.start;
  SPARSEPS_ROW_STRIDE(j, e.count) sample[e.at + j] = from[static_cast<size_t>(j) * e.stride];
}

// Each element adds one to the first round whose key it reaches; the block sums in shared
// memory first, as most elements reach none.
__global__ void ladderCountKernel(const float* __restrict__ x,
                                  const LadderEntry* __restrict__ entries, uint32_t* counts) {
  __shared__ uint32_t keys[kMaxSampledRounds];
  __shared__ uint32_t reached[kMaxSampledRounds];
  const LadderEntry& e = entries[blockIdx.y];
  const uint32_t rounds = e.rounds;
  if (threadIdx.x < rounds) {
    keys[threadIdx.x] = e.keys[threadIdx.x];
    reached[threadIdx.x] = 0;
  }
  __syncthreads();
  const float* from = x + e.offset;
  SPARSEPS_ROW_STRIDE(j, e.n) {
    const uint32_t key = magnitudeKey(from[j]);
    if (key < keys[rounds - 1]) continue;  // below the last threshold: the common case
    uint32_t r = 0;
    while (key < keys[r]) ++r;
    atomicAdd(&reached[r], 1u);
  }
  __syncthreads();
  if (threadIdx.x < rounds && reached[threadIdx.x] > 0) {
    atomicAdd(&counts[blockIdx.y * kMaxSampledRounds + threadIdx.x], reached[threadIdx.x]);
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
                            const PlaceEntry* __restrict__ entries, uint32_t* indices,
                            float* values) {
  const PlaceEntry e = entries[blockIdx.y];
  SPARSEPS_ROW_STRIDE(j, e.count) {
    const uint32_t i = filtered[e.from + j];
    indices[e.out + j] = static_cast<uint32_t>(i - e.offset);
    values[e.out + j] = x[i];
  }
}

}  // namespace

cudaError_t launchSegmentedSample(const float* x, const SampleEntry* entries, uint32_t count,
                                  uint32_t longest, float* sample, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  sampleKernel<<<rowsGrid(longest, count), kThreads, 0, stream>>>(x, entries, sample);
  return cudaGetLastError();
}

cudaError_t launchLadderCounts(const float* x, const LadderEntry* entries, uint32_t count,
                               uint32_t longest, uint32_t* counts, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  cudaError_t err = cudaMemsetAsync(
      counts, 0, static_cast<size_t>(count) * kMaxSampledRounds * sizeof(uint32_t), stream);
  if (err != cudaSuccess) return err;
  ladderCountKernel<<<rowsGrid(longest, count), kThreads, 0, stream>>>(x, entries, counts);
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
                                uint32_t count, uint32_t longest, uint32_t* indices, float* values,
                                cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  placeKernel<<<rowsGrid(longest, count), kThreads, 0, stream>>>(x, filtered, entries, indices,
                                                                 values);
  return cudaGetLastError();
}

}  // namespace sparseps::gpu

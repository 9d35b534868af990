// Magnitude top-k by radix select on the device (radix_digits.h explains the digits).
// Per pass, one kernel fuses the filter (key matches the prefix chosen so far) with a
// shared-memory histogram of the next 11-bit digit; blocks add their histogram to a
// global one, and the last block to finish scans it and advances the RadixState in
// device memory, so the passes follow each other with no host round trip. Then the
// selection by chunks (radix_digits.h): one kernel counts each chunk's keys above the
// threshold and its ties, a second has each block sum the counts before it and write
// its selected indices and values in index order. Two reads of x instead of the two
// general compactions (cub::DeviceSelect) this replaced, which also read the index
// sequence and wrote the ties.

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kBucketsPerThread = kBuckets / kThreads;
constexpr uint32_t kItemsPerBlock = kThreads * 16;
constexpr uint32_t kMaxBlocks = 1024;
constexpr int kUnroll = 4;  // loads each thread has in flight per loop step

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
  // Grid-stride, kUnroll elements a step (loads first): element i = base + j * stride.
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  for (size_t base = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x; base < n;
       base += kUnroll * stride) {
    float v[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) v[j] = base + j * stride < n ? x[base + j * stride] : 0.0f;
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const uint32_t key = magnitudeKey(v[j]);
      if (base + j * stride < n && matchesPrefix(key, s)) {
        atomicAdd(&local[digitOf(key, pass)], 1u);
      }
    }
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

// Block b's chunk of the segment: elements [begin, end).
struct Chunk {
  size_t begin;
  size_t end;
};
__device__ __forceinline__ Chunk chunkOf(uint32_t n, uint32_t chunk) {
  const size_t begin = static_cast<size_t>(blockIdx.x) * chunk;
  return Chunk{begin, begin + chunk < n ? begin + chunk : n};
}

// This thread's element j of the tile starting at `tile`: consecutive threads read
// consecutive elements, so a tile step is in index order.
__device__ __forceinline__ size_t tileElement(size_t tile, uint32_t j) {
  return tile + j * kSelectThreads + threadIdx.x;
}

// This thread's kSelectItems elements of the tile, loaded first (0 past the chunk's end).
__device__ __forceinline__ void loadTile(const float* __restrict__ x, size_t tile, size_t end,
                                         float (&v)[kSelectItems]) {
#pragma unroll
  for (uint32_t j = 0; j < kSelectItems; ++j) {
    const size_t i = tileElement(tile, j);
    v[j] = i < end ? x[i] : 0.0f;
  }
}

// Each block's chunk: its keys above the threshold T and its ties (ChunkCounts).
__global__ void __launch_bounds__(kSelectThreads)
    countChunkKernel(const float* __restrict__ x, uint32_t n, uint32_t chunk,
                     const RadixState* state, ChunkCounts* counts) {
  using BlockReduce = cub::BlockReduce<uint64_t, kSelectThreads>;
  __shared__ typename BlockReduce::TempStorage reduceTemp;
  const uint32_t threshold = state->prefix;
  const Chunk c = chunkOf(n, chunk);
  uint32_t above = 0, ties = 0;
  for (size_t tile = c.begin; tile < c.end; tile += kSelectTile) {
    float v[kSelectItems];
    loadTile(x, tile, c.end, v);
#pragma unroll
    for (uint32_t j = 0; j < kSelectItems; ++j) {
      const bool in = tileElement(tile, j) < c.end;
      const uint32_t key = magnitudeKey(v[j]);
      above += in && key > threshold;
      ties += in && key == threshold;
    }
  }
  const uint64_t sum = BlockReduce(reduceTemp).Sum((uint64_t{above} << 32) | ties);
  if (threadIdx.x == 0) {
    counts[blockIdx.x] = ChunkCounts{static_cast<uint32_t>(sum >> 32), static_cast<uint32_t>(sum)};
  }
}

// Each block: the counts of the blocks before it, then its chunk in index order, tile by
// tile, writing every selected element at selectedPosition. Per tile step j, a block scan
// of the packed (above T, tie) flags of its 256 consecutive elements gives each element
// the keys above T and the ties before it.
__global__ void __launch_bounds__(kSelectThreads)
    writeChunkKernel(const float* __restrict__ x, uint32_t n, uint32_t chunk,
                     const RadixState* state, const ChunkCounts* counts, uint32_t* indices,
                     float* values) {
  using BlockReduce = cub::BlockReduce<uint64_t, kSelectThreads>;
  using BlockScan = cub::BlockScan<uint32_t, kSelectThreads>;
  __shared__ union {
    typename BlockReduce::TempStorage reduce;
    typename BlockScan::TempStorage scan;
  } temp;
  __shared__ uint64_t before;
  const RadixState s = *state;
  uint64_t mine = 0;
  for (uint32_t b = threadIdx.x; b < blockIdx.x; b += kSelectThreads) {
    mine += (uint64_t{counts[b].above} << 32) | counts[b].ties;
  }
  const uint64_t sum = BlockReduce(temp.reduce).Sum(mine);
  if (threadIdx.x == 0) before = sum;
  __syncthreads();
  uint32_t above = static_cast<uint32_t>(before >> 32);
  uint32_t tieRank = static_cast<uint32_t>(before);
  const Chunk c = chunkOf(n, chunk);
  for (size_t tile = c.begin; tile < c.end; tile += kSelectTile) {
    float v[kSelectItems];
    loadTile(x, tile, c.end, v);
#pragma unroll
    for (uint32_t j = 0; j < kSelectItems; ++j) {
      const size_t i = tileElement(tile, j);
      const bool in = i < c.end;
      const uint32_t key = magnitudeKey(v[j]);
      const uint32_t isAbove = in && key > s.prefix;
      const uint32_t isTie = in && key == s.prefix;
      uint32_t exclusive = 0, total = 0;
      BlockScan(temp.scan).ExclusiveSum(isAbove | (isTie << 16), exclusive, total);
      const uint32_t myAbove = above + (exclusive & 0xffffu);
      const uint32_t myRank = tieRank + (exclusive >> 16);
      if (in && isSelectedAt(key, myRank, s)) {
        const uint32_t at = selectedPosition(myAbove, myRank, s);
        indices[at] = static_cast<uint32_t>(i);
        values[at] = v[j];
      }
      above += total & 0xffffu;
      tieRank += total >> 16;
      __syncthreads();  // temp.scan is reused by the next step
    }
  }
}

uint32_t selectBlocks(uint32_t n) {
  const uint32_t tiles = (n + kSelectTile - 1) / kSelectTile;
  return tiles < 1 ? 1 : (tiles > kMaxBlocks ? kMaxBlocks : tiles);
}

// The layout of temp, measured when temp == nullptr.
struct RadixTemp {
  RadixState* state;
  uint32_t* hist;
  ChunkCounts* counts;
  size_t total;
};

RadixTemp layoutRadixTemp(void* temp) {
  RadixTemp t{};
  ScratchCarver carver(temp);
  t.state = carver.take<RadixState>(1);
  t.hist = carver.take<uint32_t>(kBuckets);
  t.counts = carver.take<ChunkCounts>(kMaxBlocks);
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

size_t topkRadixTempBytes(uint32_t) { return layoutRadixTemp(nullptr).total; }

cudaError_t launchTopkRadix(const float* x, uint32_t n, uint32_t k, uint32_t* indices,
                            float* values, void* temp, cudaStream_t stream) {
  const RadixTemp t = layoutRadixTemp(temp);
  cudaError_t err = launchRadixPasses(x, n, k, t.state, t.hist, stream);
  if (err != cudaSuccess) return err;
  const uint32_t blocks = selectBlocks(n);
  const uint32_t chunk = selectChunk(n, blocks);
  countChunkKernel<<<blocks, kSelectThreads, 0, stream>>>(x, n, chunk, t.state, t.counts);
  writeChunkKernel<<<blocks, kSelectThreads, 0, stream>>>(x, n, chunk, t.state, t.counts, indices,
                                                          values);
  return cudaGetLastError();
}

}  // namespace sparseps::gpu

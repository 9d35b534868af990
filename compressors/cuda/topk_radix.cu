// Magnitude top-k by radix select on the device (radix_digits.h explains the digits), of one
// segment or of many segments of a flat vector at once (segment_plan.h): every kernel runs
// over the blocks of all segments, each block working on its own segment, so a step's
// selection takes the same six launches whatever its number of segments.
// Per pass, one kernel fuses the filter (key matches the prefix chosen so far) with a
// shared-memory histogram of the next 11-bit digit; blocks add their histogram to their
// segment's, and the segment's last block to finish scans it and advances the segment's
// RadixState in device memory, so the passes follow each other with no host round trip.
// Then the selection by chunks (radix_digits.h): one kernel counts each chunk's keys above
// the threshold and its ties, a second has each block sum the counts of its segment's
// blocks before it and write its selected indices and values in index order. Two reads of
// x instead of the two general compactions (cub::DeviceSelect) this replaced, which also
// read the index sequence and wrote the ties.

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kBucketsPerThread = kBuckets / kThreads;
constexpr int kUnroll = 4;  // loads each thread has in flight per loop step
static_assert(kThreads == kSelectThreads, "one block shape for the passes and the selection");

// Where a block's segment comes from. One segment: its entry is a kernel argument.
struct OneSegment {
  SegmentEntry entry;
  __device__ __forceinline__ uint32_t entryOf(uint32_t) const { return 0; }
  __device__ __forceinline__ SegmentEntry operator[](uint32_t) const { return entry; }
};
// Many: the plan's entries and block map in device memory.
struct ManySegments {
  const SegmentEntry* entries;
  const uint32_t* blockSegment;
  __device__ __forceinline__ uint32_t entryOf(uint32_t block) const { return blockSegment[block]; }
  __device__ __forceinline__ SegmentEntry operator[](uint32_t e) const { return entries[e]; }
};

// Block e readies entry e: its histogram zeroed, its state holding k.
template <typename Segments>
__global__ void initStateKernel(Segments segments, RadixState* states, uint32_t* hists) {
  const uint32_t e = blockIdx.x;
  uint32_t* hist = hists + static_cast<size_t>(e) * kBuckets;
  for (int b = threadIdx.x; b < kBuckets; b += blockDim.x) hist[b] = 0;
  if (threadIdx.x == 0) {
    RadixState s;
    s.kLeft = segments[e].k;
    states[e] = s;
  }
}

template <typename Segments>
__global__ void __launch_bounds__(kThreads)
    radixPassKernel(const float* __restrict__ x, Segments segments, int pass, RadixState* states,
                    uint32_t* hists) {
  using BlockScan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ uint32_t local[kBuckets];
  __shared__ typename BlockScan::TempStorage scanTemp;
  __shared__ bool isLast;
  __shared__ uint32_t target, targetAbove;

  const uint32_t e = segments.entryOf(blockIdx.x);
  const SegmentEntry seg = segments[e];
  const uint32_t block = blockIdx.x - seg.firstBlock;
  const float* __restrict__ xs = x + seg.offset;
  const uint32_t n = seg.n;
  RadixState* state = states + e;
  uint32_t* hist = hists + static_cast<size_t>(e) * kBuckets;
  const RadixState s = *state;
  for (int b = threadIdx.x; b < kBuckets; b += kThreads) local[b] = 0;
  __syncthreads();
  // Grid-stride over the segment's blocks, kUnroll elements a step (loads first):
  // element i = base + j * stride.
  const size_t stride = static_cast<size_t>(seg.blocks) * kThreads;
  for (size_t base = static_cast<size_t>(block) * kThreads + threadIdx.x; base < n;
       base += kUnroll * stride) {
    float v[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) v[j] = base + j * stride < n ? xs[base + j * stride] : 0.0f;
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
  if (threadIdx.x == 0) isLast = atomicAdd(&state->blocksDone, 1u) == seg.blocks - 1;
  __syncthreads();
  if (!isLast) return;

  // The segment's last block: exclusive scan from the highest digit down, one test per
  // bucket.
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

// A block's chunk of its segment: elements [begin, end) of xs.
struct Chunk {
  const float* xs;
  size_t begin;
  size_t end;
};
__device__ __forceinline__ Chunk chunkOf(const float* x, const SegmentEntry& seg) {
  const uint32_t chunk = selectChunk(seg.n, seg.blocks);
  const size_t begin = static_cast<size_t>(blockIdx.x - seg.firstBlock) * chunk;
  return Chunk{x + seg.offset, begin, begin + chunk < seg.n ? begin + chunk : seg.n};
}

// This thread's element j of the tile starting at `tile`: consecutive threads read
// consecutive elements, so a tile step is in index order.
__device__ __forceinline__ size_t tileElement(size_t tile, uint32_t j) {
  return tile + j * kSelectThreads + threadIdx.x;
}

// This thread's kSelectItems elements of the tile, loaded first (0 past the chunk's end).
__device__ __forceinline__ void loadTile(const Chunk& c, size_t tile, float (&v)[kSelectItems]) {
#pragma unroll
  for (uint32_t j = 0; j < kSelectItems; ++j) {
    const size_t i = tileElement(tile, j);
    v[j] = i < c.end ? c.xs[i] : 0.0f;
  }
}

// Each block's chunk: its keys above its segment's threshold T and its ties (ChunkCounts).
template <typename Segments>
__global__ void __launch_bounds__(kSelectThreads)
    countChunkKernel(const float* __restrict__ x, Segments segments, const RadixState* states,
                     ChunkCounts* counts) {
  using BlockReduce = cub::BlockReduce<uint64_t, kSelectThreads>;
  __shared__ typename BlockReduce::TempStorage reduceTemp;
  const uint32_t e = segments.entryOf(blockIdx.x);
  const SegmentEntry seg = segments[e];
  const uint32_t threshold = states[e].prefix;
  const Chunk c = chunkOf(x, seg);
  uint32_t above = 0, ties = 0;
  for (size_t tile = c.begin; tile < c.end; tile += kSelectTile) {
    float v[kSelectItems];
    loadTile(c, tile, v);
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

// Each block: the counts of its segment's blocks before it, then its chunk in index order,
// tile by tile, writing every selected element at the segment's output slots from
// selectedPosition. Per tile step j, a block scan of the packed (above T, tie) flags of its
// 256 consecutive elements gives each element the keys above T and the ties before it.
template <typename Segments>
__global__ void __launch_bounds__(kSelectThreads)
    writeChunkKernel(const float* __restrict__ x, Segments segments, const RadixState* states,
                     const ChunkCounts* counts, uint32_t* indices, float* values) {
  using BlockReduce = cub::BlockReduce<uint64_t, kSelectThreads>;
  using BlockScan = cub::BlockScan<uint32_t, kSelectThreads>;
  __shared__ union {
    typename BlockReduce::TempStorage reduce;
    typename BlockScan::TempStorage scan;
  } temp;
  __shared__ uint64_t before;
  const uint32_t e = segments.entryOf(blockIdx.x);
  const SegmentEntry seg = segments[e];
  const RadixState s = states[e];
  uint64_t mine = 0;
  for (uint32_t b = seg.firstBlock + threadIdx.x; b < blockIdx.x; b += kSelectThreads) {
    mine += (uint64_t{counts[b].above} << 32) | counts[b].ties;
  }
  const uint64_t sum = BlockReduce(temp.reduce).Sum(mine);
  if (threadIdx.x == 0) before = sum;
  __syncthreads();
  uint32_t above = static_cast<uint32_t>(before >> 32);
  uint32_t tieRank = static_cast<uint32_t>(before);
  uint32_t* outIndices = indices + seg.out;
  float* outValues = values + seg.out;
  const Chunk c = chunkOf(x, seg);
  for (size_t tile = c.begin; tile < c.end; tile += kSelectTile) {
    float v[kSelectItems];
    loadTile(c, tile, v);
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
        outIndices[at] = static_cast<uint32_t>(i);
        outValues[at] = v[j];
      }
      above += total & 0xffffu;
      tieRank += total >> 16;
      __syncthreads();  // temp.scan is reused by the next step
    }
  }
}

// The six launches of a plan of `entries` entries and `blocks` blocks in all.
template <typename Segments>
cudaError_t launchPasses(const float* x, Segments segments, uint32_t entries, uint32_t blocks,
                         RadixState* states, uint32_t* hists, cudaStream_t stream) {
  initStateKernel<<<entries, kThreads, 0, stream>>>(segments, states, hists);
  for (int pass = 0; pass < kRadixPasses; ++pass) {
    radixPassKernel<<<blocks, kThreads, 0, stream>>>(x, segments, pass, states, hists);
  }
  return cudaGetLastError();
}

template <typename Segments>
cudaError_t launchSelect(const float* x, Segments segments, uint32_t entries, uint32_t blocks,
                         RadixState* states, uint32_t* hists, ChunkCounts* counts,
                         uint32_t* indices, float* values, cudaStream_t stream) {
  cudaError_t err = launchPasses(x, segments, entries, blocks, states, hists, stream);
  if (err != cudaSuccess) return err;
  countChunkKernel<<<blocks, kSelectThreads, 0, stream>>>(x, segments, states, counts);
  writeChunkKernel<<<blocks, kSelectThreads, 0, stream>>>(x, segments, states, counts, indices,
                                                          values);
  return cudaGetLastError();
}

OneSegment oneSegment(uint32_t n, uint32_t k) {
  SegmentEntry e;
  e.n = n;
  e.k = k;
  e.blocks = segmentBlocks(n);
  return OneSegment{e};
}

// The layout of temp, measured when temp == nullptr.
struct RadixTemp {
  RadixState* states;
  uint32_t* hists;
  ChunkCounts* counts;
  SegmentEntry* entries;
  uint32_t* blockSegment;
  size_t total;
};

RadixTemp layoutRadixTemp(void* temp, size_t entries, size_t blocks, bool plan) {
  RadixTemp t{};
  ScratchCarver carver(temp);
  t.states = carver.take<RadixState>(entries);
  t.hists = carver.take<uint32_t>(entries * kBuckets);
  t.counts = carver.take<ChunkCounts>(blocks);
  t.entries = plan ? carver.take<SegmentEntry>(entries) : nullptr;
  t.blockSegment = plan ? carver.take<uint32_t>(blocks) : nullptr;
  t.total = carver.used();
  return t;
}

}  // namespace

cudaError_t launchRadixPasses(const float* x, uint32_t n, uint32_t k, RadixState* state,
                              uint32_t* hist, cudaStream_t stream) {
  const OneSegment one = oneSegment(n, k);
  return launchPasses(x, one, 1, one.entry.blocks, state, hist, stream);
}

size_t topkRadixTempBytes(uint32_t n) {
  return layoutRadixTemp(nullptr, 1, segmentBlocks(n), false).total;
}

cudaError_t launchTopkRadix(const float* x, uint32_t n, uint32_t k, uint32_t* indices,
                            float* values, void* temp, cudaStream_t stream) {
  const OneSegment one = oneSegment(n, k);
  const RadixTemp t = layoutRadixTemp(temp, 1, one.entry.blocks, false);
  return launchSelect(x, one, 1, one.entry.blocks, t.states, t.hists, t.counts, indices, values,
                      stream);
}

size_t segmentedTopkTempBytes(const SegmentPlan& plan) {
  return layoutRadixTemp(nullptr, plan.entries.size(), plan.blockSegment.size(), true).total;
}

cudaError_t uploadSegmentPlan(const SegmentPlan& plan, void* temp, cudaStream_t stream) {
  const RadixTemp t = layoutRadixTemp(temp, plan.entries.size(), plan.blockSegment.size(), true);
  cudaError_t err =
      cudaMemcpyAsync(t.entries, plan.entries.data(), plan.entries.size() * sizeof(SegmentEntry),
                      cudaMemcpyHostToDevice, stream);
  if (err != cudaSuccess) return err;
  return cudaMemcpyAsync(t.blockSegment, plan.blockSegment.data(),
                         plan.blockSegment.size() * sizeof(uint32_t), cudaMemcpyHostToDevice,
                         stream);
}

cudaError_t launchSegmentedTopk(const float* x, const SegmentPlan& plan, uint32_t* indices,
                                float* values, void* temp, cudaStream_t stream) {
  const auto entries = static_cast<uint32_t>(plan.entries.size());
  const auto blocks = static_cast<uint32_t>(plan.blockSegment.size());
  if (entries == 0) return cudaSuccess;
  const RadixTemp t = layoutRadixTemp(temp, entries, blocks, true);
  return launchSelect(x, ManySegments{t.entries, t.blockSegment}, entries, blocks, t.states,
                      t.hists, t.counts, indices, values, stream);
}

}  // namespace sparseps::gpu

// Magnitude top-k by radix select on the device (radix_digits.h explains the digits), of one
// segment or of many segments of a flat vector at once (segment_plan.h): every kernel runs
// over the blocks of all segments, each block working on its own segment, so a step's
// selection takes the same six launches whatever its number of segments.
// Per pass, one kernel fuses the filter (key matches the prefix chosen so far) with a
// shared-memory histogram of the next 11-bit digit; blocks add their histogram to their
// segment's, and the segment's last block to finish scans it and advances the segment's
// RadixState in device memory, so the passes follow each other with no host round trip.
// Pass 0 reads all of x; pass 1 reads x once more, each block its chunk, and keeps the
// chunk's survivors (radix_digits.h) in the block's room; pass 2 and the selection read a
// block's survivors, or its chunk of x where they overflowed the room. The selection by
// chunks (radix_digits.h): one kernel counts each block's keys above the threshold and its
// ties, a second has each block sum the counts of its segment's blocks before it and write
// its selected indices and values in index order.

#include <cub/block/block_load.cuh>
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

// Adds the block's histogram `local` to its segment's `hist`; the segment's last block to
// finish then scans it from the highest digit down (one test per bucket) and advances the
// segment's state `s` for the next pass.
__device__ void finishPass(const uint32_t* local, uint32_t* hist, RadixState* state,
                           const RadixState& s, uint32_t blocks, int pass) {
  using BlockScan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename BlockScan::TempStorage scanTemp;
  __shared__ bool isLast;
  __shared__ uint32_t target, targetAbove;
  __syncthreads();  // local is complete
  for (int b = threadIdx.x; b < kBuckets; b += kThreads) {
    if (local[b] != 0) atomicAdd(&hist[b], local[b]);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) isLast = atomicAdd(&state->blocksDone, 1u) == blocks - 1;
  __syncthreads();
  if (!isLast) return;

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

// A pass over all of x, grid-stride over the segment's blocks (pass 0; every pass of
// launchRadixPasses).
template <typename Segments>
__global__ void __launch_bounds__(kThreads)
    radixPassKernel(const float* __restrict__ x, Segments segments, int pass, RadixState* states,
                    uint32_t* hists) {
  __shared__ uint32_t local[kBuckets];
  const uint32_t e = segments.entryOf(blockIdx.x);
  const SegmentEntry seg = segments[e];
  const uint32_t block = blockIdx.x - seg.firstBlock;
  const float* __restrict__ xs = x + seg.offset;
  const uint32_t n = seg.n;
  const RadixState s = states[e];
  for (int b = threadIdx.x; b < kBuckets; b += kThreads) local[b] = 0;
  __syncthreads();
  // kUnroll elements a step (loads first): element i = base + j * stride.
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
  finishPass(local, hists + static_cast<size_t>(e) * kBuckets, states + e, s, seg.blocks, pass);
}

// Where a block's survivors go and where its chunk lies.
struct BlockRoom {
  size_t begin;  // the chunk: elements [begin, end) of the segment
  size_t end;
  size_t slot;   // the room: survivor slots [slot, slot + room)
  uint32_t room;
};
__device__ __forceinline__ BlockRoom roomOf(const SegmentEntry& seg) {
  const uint32_t chunk = selectChunk(seg.n, seg.blocks);
  const uint32_t block = blockIdx.x - seg.firstBlock;
  const size_t begin = static_cast<size_t>(block) * chunk;
  const uint32_t room = blockRoom(seg.n, seg.k, seg.blocks);
  return BlockRoom{begin, begin + chunk < seg.n ? begin + chunk : seg.n,
                   seg.room + static_cast<size_t>(block) * room, room};
}

// Pass 1: each block's chunk in index order, tile by tile (loaded into a blocked
// arrangement, so that thread t's items are consecutive and one block scan per tile orders
// them); its survivors written to its room while they fit, their number to survivors.
template <typename Segments>
__global__ void __launch_bounds__(kThreads)
    survivorPassKernel(const float* __restrict__ x, Segments segments, RadixState* states,
                       uint32_t* hists, uint32_t* survivors, uint32_t* roomIndices,
                       float* roomValues) {
  using BlockLoad = cub::BlockLoad<float, kThreads, kSelectItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using BlockScan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ union {
    typename BlockLoad::TempStorage load;
    typename BlockScan::TempStorage scan;
  } temp;
  __shared__ uint32_t local[kBuckets];
  const uint32_t e = segments.entryOf(blockIdx.x);
  const SegmentEntry seg = segments[e];
  const RadixState s = states[e];
  const BlockRoom r = roomOf(seg);
  const float* __restrict__ xs = x + seg.offset;
  for (int b = threadIdx.x; b < kBuckets; b += kThreads) local[b] = 0;
  __syncthreads();
  uint32_t kept = 0;  // survivors so far, the same in every thread
  for (size_t tile = r.begin; tile < r.end; tile += kSelectTile) {
    const int valid = static_cast<int>(r.end - tile < kSelectTile ? r.end - tile : kSelectTile);
    float v[kSelectItems];
    BlockLoad(temp.load).Load(xs + tile, v, valid, 0.0f);
    uint32_t flag[kSelectItems], pos[kSelectItems];
#pragma unroll
    for (uint32_t j = 0; j < kSelectItems; ++j) {
      const bool in = threadIdx.x * kSelectItems + j < static_cast<uint32_t>(valid);
      const uint32_t key = magnitudeKey(v[j]);
      flag[j] = in && survives(key, s);
      if (in && matchesPrefix(key, s)) atomicAdd(&local[digitOf(key, 1)], 1u);
    }
    __syncthreads();  // temp.load is reused by the scan
    uint32_t total = 0;
    BlockScan(temp.scan).ExclusiveSum(flag, pos, total);
#pragma unroll
    for (uint32_t j = 0; j < kSelectItems; ++j) {
      if (flag[j] && kept + pos[j] < r.room) {
        roomIndices[r.slot + kept + pos[j]] =
            static_cast<uint32_t>(tile + threadIdx.x * kSelectItems + j);
        roomValues[r.slot + kept + pos[j]] = v[j];
      }
    }
    kept += total;
    __syncthreads();  // temp.scan is reused by the next load
  }
  if (threadIdx.x == 0) survivors[blockIdx.x] = kept;
  finishPass(local, hists + static_cast<size_t>(e) * kBuckets, states + e, s, seg.blocks, 1);
}

// The elements a block reads after pass 1, in index order: its survivors where they fit its
// room, else its chunk of x.
struct BlockElements {
  const float* xs;
  const uint32_t* indices;
  const float* values;
  size_t begin;
  uint32_t size;
  bool listed;
  // Element p (< size): its index in the segment and its value.
  __device__ __forceinline__ void load(uint32_t p, uint32_t* i, float* v) const {
    if (listed) {
      *i = indices[p];
      *v = values[p];
    } else {
      *i = static_cast<uint32_t>(begin + p);
      *v = xs[begin + p];
    }
  }
};
__device__ __forceinline__ BlockElements elementsOf(const float* x, const SegmentEntry& seg,
                                                    const uint32_t* survivors,
                                                    const uint32_t* roomIndices,
                                                    const float* roomValues) {
  const BlockRoom r = roomOf(seg);
  const uint32_t kept = survivors[blockIdx.x];
  const bool listed = kept <= r.room;
  return BlockElements{x + seg.offset, roomIndices + r.slot, roomValues + r.slot, r.begin,
                       listed ? kept : static_cast<uint32_t>(r.end > r.begin ? r.end - r.begin : 0),
                       listed};
}

// Pass 2 over each block's elements.
template <typename Segments>
__global__ void __launch_bounds__(kThreads)
    elementsPassKernel(const float* __restrict__ x, Segments segments, RadixState* states,
                       uint32_t* hists, const uint32_t* survivors, const uint32_t* roomIndices,
                       const float* roomValues) {
  __shared__ uint32_t local[kBuckets];
  const uint32_t e = segments.entryOf(blockIdx.x);
  const SegmentEntry seg = segments[e];
  const RadixState s = states[e];
  const BlockElements el = elementsOf(x, seg, survivors, roomIndices, roomValues);
  for (int b = threadIdx.x; b < kBuckets; b += kThreads) local[b] = 0;
  __syncthreads();
  for (uint32_t p = threadIdx.x; p < el.size; p += kThreads) {
    uint32_t i;
    float v;
    el.load(p, &i, &v);
    const uint32_t key = magnitudeKey(v);
    if (matchesPrefix(key, s)) atomicAdd(&local[digitOf(key, 2)], 1u);
  }
  finishPass(local, hists + static_cast<size_t>(e) * kBuckets, states + e, s, seg.blocks, 2);
}

// This thread's element j of the tile starting at `tile`: consecutive threads read
// consecutive elements, so a tile step is in index order.
__device__ __forceinline__ uint32_t tileElement(uint32_t tile, uint32_t j) {
  return tile + j * kSelectThreads + threadIdx.x;
}

// This thread's kSelectItems elements of the tile, loaded first (value 0 past the end).
__device__ __forceinline__ void loadTile(const BlockElements& el, uint32_t tile,
                                         uint32_t (&i)[kSelectItems], float (&v)[kSelectItems]) {
#pragma unroll
  for (uint32_t j = 0; j < kSelectItems; ++j) {
    const uint32_t p = tileElement(tile, j);
    i[j] = 0;
    v[j] = 0.0f;
    if (p < el.size) el.load(p, &i[j], &v[j]);
  }
}

// Each block's elements: its keys above its segment's threshold T and its ties (ChunkCounts).
template <typename Segments>
__global__ void __launch_bounds__(kSelectThreads)
    countChunkKernel(const float* __restrict__ x, Segments segments, const RadixState* states,
                     const uint32_t* survivors, const uint32_t* roomIndices,
                     const float* roomValues, ChunkCounts* counts) {
  using BlockReduce = cub::BlockReduce<uint64_t, kSelectThreads>;
  __shared__ typename BlockReduce::TempStorage reduceTemp;
  const uint32_t e = segments.entryOf(blockIdx.x);
  const SegmentEntry seg = segments[e];
  const uint32_t threshold = states[e].prefix;
  const BlockElements el = elementsOf(x, seg, survivors, roomIndices, roomValues);
  uint32_t above = 0, ties = 0;
  for (uint32_t tile = 0; tile < el.size; tile += kSelectTile) {
    uint32_t i[kSelectItems];
    float v[kSelectItems];
    loadTile(el, tile, i, v);
#pragma unroll
    for (uint32_t j = 0; j < kSelectItems; ++j) {
      const bool in = tileElement(tile, j) < el.size;
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

// Each block: the counts of its segment's blocks before it, then its elements in index
// order, tile by tile, writing every selected element at the segment's output slots from
// selectedPosition. Per tile step j, a block scan of the packed (above T, tie) flags of its
// 256 consecutive elements gives each element the keys above T and the ties before it.
template <typename Segments>
__global__ void __launch_bounds__(kSelectThreads)
    writeChunkKernel(const float* __restrict__ x, Segments segments, const RadixState* states,
                     const uint32_t* survivors, const uint32_t* roomIndices,
                     const float* roomValues, const ChunkCounts* counts, uint32_t* indices,
                     float* values) {
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
  const BlockElements el = elementsOf(x, seg, survivors, roomIndices, roomValues);
  for (uint32_t tile = 0; tile < el.size; tile += kSelectTile) {
    uint32_t i[kSelectItems];
    float v[kSelectItems];
    loadTile(el, tile, i, v);
#pragma unroll
    for (uint32_t j = 0; j < kSelectItems; ++j) {
      const bool in = tileElement(tile, j) < el.size;
      const uint32_t key = magnitudeKey(v[j]);
      const uint32_t isAbove = in && key > s.prefix;
      const uint32_t isTie = in && key == s.prefix;
      uint32_t exclusive = 0, total = 0;
      BlockScan(temp.scan).ExclusiveSum(isAbove | (isTie << 16), exclusive, total);
      const uint32_t myAbove = above + (exclusive & 0xffffu);
      const uint32_t myRank = tieRank + (exclusive >> 16);
      if (in && isSelectedAt(key, myRank, s)) {
        const uint32_t at = selectedPosition(myAbove, myRank, s);
        outIndices[at] = i[j];
        outValues[at] = v[j];
      }
      above += total & 0xffffu;
      tieRank += total >> 16;
      __syncthreads();  // temp.scan is reused by the next step
    }
  }
}

// The three passes over all of x (launchRadixPasses).
template <typename Segments>
cudaError_t launchFullPasses(const float* x, Segments segments, uint32_t entries, uint32_t blocks,
                             RadixState* states, uint32_t* hists, cudaStream_t stream) {
  initStateKernel<<<entries, kThreads, 0, stream>>>(segments, states, hists);
  for (int pass = 0; pass < kRadixPasses; ++pass) {
    radixPassKernel<<<blocks, kThreads, 0, stream>>>(x, segments, pass, states, hists);
  }
  return cudaGetLastError();
}

// The layout of temp for `entries` entries, `blocks` blocks and `rooms` survivor slots
// (with `plan`, room for the plan itself), measured when temp == nullptr.
struct RadixTemp {
  RadixState* states;
  uint32_t* hists;
  ChunkCounts* counts;
  uint32_t* survivors;
  uint32_t* roomIndices;
  float* roomValues;
  SegmentEntry* entries;
  uint32_t* blockSegment;
  size_t total;
};

RadixTemp layoutRadixTemp(void* temp, size_t entries, size_t blocks, uint64_t rooms, bool plan) {
  RadixTemp t{};
  ScratchCarver carver(temp);
  t.states = carver.take<RadixState>(entries);
  t.hists = carver.take<uint32_t>(entries * kBuckets);
  t.counts = carver.take<ChunkCounts>(blocks);
  t.survivors = carver.take<uint32_t>(blocks);
  t.roomIndices = carver.take<uint32_t>(rooms);
  t.roomValues = carver.take<float>(rooms);
  t.entries = plan ? carver.take<SegmentEntry>(entries) : nullptr;
  t.blockSegment = plan ? carver.take<uint32_t>(blocks) : nullptr;
  t.total = carver.used();
  return t;
}

// The selection's six launches: init, pass 0 over x, pass 1 keeping the survivors, pass 2,
// the counts and the writes.
template <typename Segments>
cudaError_t launchSelect(const float* x, Segments segments, uint32_t entries, uint32_t blocks,
                         const RadixTemp& t, uint32_t* indices, float* values,
                         cudaStream_t stream) {
  initStateKernel<<<entries, kThreads, 0, stream>>>(segments, t.states, t.hists);
  radixPassKernel<<<blocks, kThreads, 0, stream>>>(x, segments, 0, t.states, t.hists);
  survivorPassKernel<<<blocks, kThreads, 0, stream>>>(x, segments, t.states, t.hists, t.survivors,
                                                      t.roomIndices, t.roomValues);
  elementsPassKernel<<<blocks, kThreads, 0, stream>>>(x, segments, t.states, t.hists, t.survivors,
                                                      t.roomIndices, t.roomValues);
  countChunkKernel<<<blocks, kSelectThreads, 0, stream>>>(x, segments, t.states, t.survivors,
                                                          t.roomIndices, t.roomValues, t.counts);
  writeChunkKernel<<<blocks, kSelectThreads, 0, stream>>>(x, segments, t.states, t.survivors,
                                                          t.roomIndices, t.roomValues, t.counts,
                                                          indices, values);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchRadixPasses(const float* x, uint32_t n, uint32_t k, RadixState* state,
                              uint32_t* hist, cudaStream_t stream) {
  const SegmentEntry one = makeEntry(0, n, k, 0, 0, 0);
  return launchFullPasses(x, OneSegment{one}, 1, one.blocks, state, hist, stream);
}

size_t topkRadixTempBytes(uint32_t n) {
  // The most survivor slots any k needs: those of k = 1.
  const SegmentEntry one = makeEntry(0, n, 1, 0, 0, 0);
  return layoutRadixTemp(nullptr, 1, one.blocks, entryRooms(one), false).total;
}

cudaError_t launchTopkRadix(const float* x, uint32_t n, uint32_t k, uint32_t* indices,
                            float* values, void* temp, cudaStream_t stream) {
  const SegmentEntry one = makeEntry(0, n, k, 0, 0, 0);
  const RadixTemp t = layoutRadixTemp(temp, 1, one.blocks, entryRooms(one), false);
  return launchSelect(x, OneSegment{one}, 1, one.blocks, t, indices, values, stream);
}

size_t segmentedTopkTempBytes(const SegmentPlan& plan) {
  return layoutRadixTemp(nullptr, plan.entries.size(), plan.blockSegment.size(), plan.rooms, true)
      .total;
}

cudaError_t uploadSegmentPlan(const SegmentPlan& plan, void* temp, PinnedBuffer* staging,
                              cudaStream_t stream) {
  const RadixTemp t =
      layoutRadixTemp(temp, plan.entries.size(), plan.blockSegment.size(), plan.rooms, true);
  return staging->upload(
      {{plan.entries.data(), t.entries, plan.entries.size() * sizeof(SegmentEntry)},
       {plan.blockSegment.data(), t.blockSegment, plan.blockSegment.size() * sizeof(uint32_t)}},
      stream);
}

cudaError_t launchSegmentedTopk(const float* x, const SegmentPlan& plan, uint32_t* indices,
                                float* values, void* temp, cudaStream_t stream) {
  const auto entries = static_cast<uint32_t>(plan.entries.size());
  const auto blocks = static_cast<uint32_t>(plan.blockSegment.size());
  if (entries == 0) return cudaSuccess;
  const RadixTemp t = layoutRadixTemp(temp, entries, blocks, plan.rooms, true);
  return launchSelect(x, ManySegments{t.entries, t.blockSegment}, entries, blocks, t, indices,
                      values, stream);
}

}  // namespace sparseps::gpu

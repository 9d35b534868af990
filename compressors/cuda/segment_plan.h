#pragma once
// The block plan of the radix top-k (topk_radix.cu, and its host simulation
// radix_select_sim.cc): which blocks work on which segment of a flat vector and where
// each segment's selection goes. A step's segments are selected together, in one launch per
// phase whatever their number: each segment gets its own blocks, about one per
// kItemsPerBlock elements, and its own run of output slots, in segment order. One segment
// alone is the plan of one request.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compressors/cuda/radix_digits.h"

namespace sparseps::gpu {

constexpr uint32_t kItemsPerBlock = 4096;
constexpr uint32_t kMaxBlocksPerSegment = 1024;

// One segment's part of the plan, as the kernels read it.
struct SegmentEntry {
  uint64_t offset = 0;      // its first element in the flat x
  uint32_t n = 0;           // its elements
  uint32_t k = 0;           // how many to select: 1..n
  uint32_t firstBlock = 0;  // its blocks are [firstBlock, firstBlock + blocks)
  uint32_t blocks = 0;
  uint32_t out = 0;  // its first output slot
  uint64_t room = 0;  // its first survivor slot (radix_digits.h): block b's are
                      // [room + b * blockRoom(n, k, blocks), ...)
};

// A segment to select from: x[offset, offset + n), its k largest magnitudes.
struct SegmentRequest {
  uint64_t offset = 0;
  uint64_t n = 0;
  uint64_t k = 0;
  bool operator==(const SegmentRequest& o) const {
    return offset == o.offset && n == o.n && k == o.k;
  }
};

struct SegmentPlan {
  std::vector<SegmentEntry> entries;   // the requests with n and k >= 1, in order
  std::vector<uint32_t> blockSegment;  // each block's entry
  std::vector<uint32_t> first;         // per request: its first output slot
  std::vector<uint32_t> count;         // per request: min(k, n), its output slots
  uint32_t total = 0;                  // output slots of all requests
  uint64_t rooms = 0;                  // survivor slots of all blocks
};

// Blocks for a segment of n elements (n >= 1).
inline uint32_t segmentBlocks(uint32_t n) {
  const uint64_t blocks = (uint64_t{n} + kItemsPerBlock - 1) / kItemsPerBlock;
  return static_cast<uint32_t>(blocks < kMaxBlocksPerSegment ? blocks : kMaxBlocksPerSegment);
}

// The entry of a segment x[offset, offset + n) with 1 <= k <= n: its blocks from firstBlock,
// its output slots from out, its survivor slots from room.
inline SegmentEntry makeEntry(uint64_t offset, uint32_t n, uint32_t k, uint32_t firstBlock,
                              uint32_t out, uint64_t room) {
  SegmentEntry e;
  e.offset = offset;
  e.n = n;
  e.k = k;
  e.firstBlock = firstBlock;
  e.blocks = segmentBlocks(n);
  e.out = out;
  e.room = room;
  return e;
}

// The survivor slots of an entry's blocks.
inline uint64_t entryRooms(const SegmentEntry& e) {
  return uint64_t{e.blocks} * blockRoom(e.n, e.k, e.blocks);
}

// The plan of `requests`. An error message (and an empty plan) when a segment has 2^32
// elements or more or the outputs together do: the kernels index with u32.
inline std::string planSegments(const std::vector<SegmentRequest>& requests, SegmentPlan* plan) {
  *plan = SegmentPlan{};
  constexpr uint64_t kLimit = uint64_t{1} << 32;
  uint64_t total = 0;
  for (const SegmentRequest& r : requests) {
    if (r.n >= kLimit) {
      *plan = SegmentPlan{};
      return "segment of " + std::to_string(r.n) + " elements exceeds the u32 index range";
    }
    const uint64_t k = r.k < r.n ? r.k : r.n;
    plan->first.push_back(static_cast<uint32_t>(total));
    plan->count.push_back(static_cast<uint32_t>(k));
    if (k > 0) {
      const SegmentEntry e = makeEntry(r.offset, static_cast<uint32_t>(r.n),
                                       static_cast<uint32_t>(k),
                                       static_cast<uint32_t>(plan->blockSegment.size()),
                                       static_cast<uint32_t>(total), plan->rooms);
      plan->rooms += entryRooms(e);
      plan->blockSegment.insert(plan->blockSegment.end(), e.blocks,
                                static_cast<uint32_t>(plan->entries.size()));
      plan->entries.push_back(e);
    }
    total += k;
    if (total >= kLimit) {
      *plan = SegmentPlan{};
      return "selections of " + std::to_string(total) + " elements exceed the u32 index range";
    }
  }
  plan->total = static_cast<uint32_t>(total);
  return "";
}

}  // namespace sparseps::gpu

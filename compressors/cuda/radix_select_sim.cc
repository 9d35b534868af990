#include "compressors/cuda/radix_select_sim.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/cuda/radix_digits.h"

namespace sparseps::gpu {
namespace {

// The device memory of a plan's selection, simulated with the kernels' indexing: per block
// (numbered across all entries) its counts and its survivors, the survivor slots of all
// rooms, and which block wrote each slot (-1: none), so that rooms that overlap are found.
struct PlanMemory {
  PlanMemory(size_t blocks, uint64_t rooms)
      : counts(blocks), survivors(blocks, 0), roomIndex(rooms, 0), roomValue(rooms, 0.0f),
        roomOwner(rooms, -1) {}
  std::vector<ChunkCounts> counts;
  std::vector<uint32_t> survivors;
  std::vector<uint32_t> roomIndex;
  std::vector<float> roomValue;
  std::vector<int64_t> roomOwner;
};

// A block's elements in index order for pass 2 and the selection: its survivors when they
// fit its room, else its chunk of x (radix_digits.h).
struct BlockElements {
  std::vector<uint32_t> index;
  std::vector<float> value;
};

// The last block's bucket search: exclusive scan from the highest digit down, each bucket
// tested, then the state advanced.
absl::Status finishPass(const std::vector<uint32_t>& hist, int pass, RadixState* state) {
  int found = 0;
  uint32_t bucket = 0, bucketAbove = 0, above = 0;
  for (int d = kBuckets - 1; d >= 0; --d) {
    if (isTargetBucket(above, hist[d], state->kLeft)) {
      ++found;
      bucket = static_cast<uint32_t>(d);
      bucketAbove = above;
    }
    above += hist[d];
  }
  if (found != 1) {
    return absl::InternalError(absl::StrCat("radix pass ", pass, " found ", found,
                                            " target buckets for kLeft ", state->kLeft));
  }
  advanceState(state, pass, bucket, bucketAbove);
  return absl::OkStatus();
}

// Plan entry `entry` (e) as its blocks run it over the flat x, in the memory of the whole
// plan; its selection goes to slots [e.out, e.out + e.k) of indices and values.
absl::Status simulateEntry(absl::Span<const float> flat, const SegmentEntry& e, uint32_t entry,
                           const std::vector<uint32_t>& blockSegment, size_t threads,
                           PlanMemory* memory, std::vector<uint32_t>* indices,
                           std::vector<float>* values, RadixSimStats* stats) {
  if (e.offset + e.n > flat.size()) {
    return absl::InvalidArgumentError(absl::StrCat("segment [", e.offset, ", ", e.offset + e.n,
                                                   ") outside x of ", flat.size()));
  }
  for (uint32_t b = e.firstBlock; b < e.firstBlock + e.blocks; ++b) {
    if (b >= blockSegment.size() || blockSegment[b] != entry) {
      return absl::InternalError(absl::StrCat("block ", b, " is not mapped to entry ", entry));
    }
  }
  const absl::Span<const float> x = flat.subspan(e.offset, e.n);
  const size_t n = x.size(), blocks = e.blocks;
  RadixState state;
  state.kLeft = e.k;
  std::vector<uint32_t> hist(kBuckets, 0u);
  // Pass 0: grid-stride over x.
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t start = b * threads; start < n; start += blocks * threads) {
      for (size_t i = start; i < std::min(n, start + threads); ++i) {
        const uint32_t key = magnitudeKey(x[i]);
        if (matchesPrefix(key, state)) ++hist[digitOf(key, 0)];
      }
    }
  }
  if (absl::Status s = finishPass(hist, 0, &state); !s.ok()) return s;
  // Pass 1: each block's chunk in order, its survivors written to its room while they fit.
  const uint32_t chunk = selectChunk(e.n, e.blocks);
  const uint32_t room = blockRoom(e.n, e.k, e.blocks);
  std::fill(hist.begin(), hist.end(), 0u);
  std::vector<BlockElements> elements(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    const size_t block = e.firstBlock + b;
    const uint64_t slot = e.room + b * room;
    uint32_t& kept = memory->survivors[block];
    for (size_t i = b * chunk; i < std::min(n, (b + 1) * chunk); ++i) {
      const uint32_t key = magnitudeKey(x[i]);
      if (matchesPrefix(key, state)) ++hist[digitOf(key, 1)];
      if (!survives(key, state)) continue;
      if (kept < room) {
        const uint64_t at = slot + kept;
        if (at >= memory->roomOwner.size() ||
            (memory->roomOwner[at] != -1 && memory->roomOwner[at] != static_cast<int64_t>(block))) {
          return absl::InternalError(absl::StrCat("block ", block, " writes survivor slot ", at,
                                                  ", outside the rooms or another block's"));
        }
        memory->roomOwner[at] = static_cast<int64_t>(block);
        memory->roomIndex[at] = static_cast<uint32_t>(i);
        memory->roomValue[at] = x[i];
      }
      ++kept;
    }
  }
  if (absl::Status s = finishPass(hist, 1, &state); !s.ok()) return s;
  // What each block reads from here on: its room's survivors, or its chunk of x.
  for (size_t b = 0; b < blocks; ++b) {
    const uint32_t kept = memory->survivors[e.firstBlock + b];
    BlockElements& el = elements[b];
    if (kept <= room) {
      stats->survivors += kept;
      const uint64_t slot = e.room + b * room;
      el.index.assign(memory->roomIndex.begin() + slot, memory->roomIndex.begin() + slot + kept);
      el.value.assign(memory->roomValue.begin() + slot, memory->roomValue.begin() + slot + kept);
    } else {
      ++stats->overflowedBlocks;
      for (size_t i = b * chunk; i < std::min(n, (b + 1) * chunk); ++i) {
        el.index.push_back(static_cast<uint32_t>(i));
        el.value.push_back(x[i]);
      }
    }
  }
  // Pass 2: each block's elements.
  std::fill(hist.begin(), hist.end(), 0u);
  for (const BlockElements& el : elements) {
    for (float v : el.value) {
      const uint32_t key = magnitudeKey(v);
      if (matchesPrefix(key, state)) ++hist[digitOf(key, 2)];
    }
  }
  if (absl::Status s = finishPass(hist, 2, &state); !s.ok()) return s;
  // The selection by blocks: each block's counts, then each block's walk of its elements
  // with the counts of the segment's blocks before it.
  for (size_t b = 0; b < blocks; ++b) {
    ChunkCounts& c = memory->counts[e.firstBlock + b];
    for (float v : elements[b].value) {
      const uint32_t key = magnitudeKey(v);
      c.above += key > state.prefix;
      c.ties += key == state.prefix;
    }
  }
  std::vector<bool> written(e.k, false);
  for (size_t b = 0; b < blocks; ++b) {
    uint32_t above = 0, tieRank = 0;
    for (size_t before = e.firstBlock; before < e.firstBlock + b; ++before) {
      above += memory->counts[before].above;
      tieRank += memory->counts[before].ties;
    }
    const BlockElements& el = elements[b];
    for (size_t p = 0; p < el.index.size(); ++p) {
      const uint32_t key = magnitudeKey(el.value[p]);
      if (isSelectedAt(key, tieRank, state)) {
        const uint32_t at = selectedPosition(above, tieRank, state);
        if (at >= e.k || written[at]) {
          return absl::InternalError(absl::StrCat("element ", el.index[p], " selected into slot ",
                                                  at, " (k = ", e.k, "), taken or out of range"));
        }
        written[at] = true;
        (*indices)[e.out + at] = el.index[p];
        (*values)[e.out + at] = el.value[p];
      }
      above += key > state.prefix;
      tieRank += key == state.prefix;
    }
  }
  if (std::find(written.begin(), written.end(), false) != written.end()) {
    return absl::InternalError(absl::StrCat("fewer than k = ", e.k, " elements selected"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status radixTopkSim(absl::Span<const float> x, size_t k, size_t blocks, size_t threads,
                          std::vector<uint32_t>* indices, std::vector<float>* values,
                          RadixSimStats* stats) {
  RadixSimStats unused;
  if (stats == nullptr) stats = &unused;
  k = std::min(k, x.size());
  indices->assign(k, 0);
  values->assign(k, 0.0f);
  if (k == 0) return absl::OkStatus();
  SegmentEntry e = makeEntry(0, static_cast<uint32_t>(x.size()), static_cast<uint32_t>(k), 0, 0, 0);
  e.blocks = static_cast<uint32_t>(blocks);  // as the caller asks, not as planned
  PlanMemory memory(blocks, entryRooms(e));
  return simulateEntry(x, e, 0, std::vector<uint32_t>(blocks, 0u), threads, &memory, indices,
                       values, stats);
}

absl::Status segmentedTopkSim(absl::Span<const float> x,
                              const std::vector<SegmentRequest>& requests, size_t threads,
                              SegmentPlan* plan, std::vector<uint32_t>* indices,
                              std::vector<float>* values, RadixSimStats* stats) {
  RadixSimStats unused;
  if (stats == nullptr) stats = &unused;
  if (std::string error = planSegments(requests, plan); !error.empty()) {
    return absl::InvalidArgumentError(error);
  }
  indices->assign(plan->total, 0);
  values->assign(plan->total, 0.0f);
  PlanMemory memory(plan->blockSegment.size(), plan->rooms);
  for (size_t i = 0; i < plan->entries.size(); ++i) {
    absl::Status s = simulateEntry(x, plan->entries[i], static_cast<uint32_t>(i),
                                   plan->blockSegment, threads, &memory, indices, values, stats);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace sparseps::gpu

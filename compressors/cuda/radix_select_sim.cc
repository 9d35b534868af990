#include "compressors/cuda/radix_select_sim.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/cuda/radix_digits.h"

namespace sparseps::gpu {
namespace {

// A block's elements in index order for pass 2 and the selection: its survivors when they
// fit its room, else its chunk of x (radix_digits.h).
struct BlockElements {
  std::vector<uint32_t> index;
  std::vector<float> value;
};

// The grid-stride histogram of one pass over all of x, added up over the blocks.
void histogramPass(absl::Span<const float> x, size_t blocks, size_t threads, int pass,
                   const RadixState& state, std::vector<uint32_t>* hist) {
  const size_t n = x.size();
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t start = b * threads; start < n; start += blocks * threads) {
      for (size_t i = start; i < std::min(n, start + threads); ++i) {
        const uint32_t key = magnitudeKey(x[i]);
        if (matchesPrefix(key, state)) ++(*hist)[digitOf(key, pass)];
      }
    }
  }
}

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

// One plan entry, as its blocks run it: x is the entry's segment, and its selection goes
// to slots [e.out, e.out + e.k) of indices and values.
absl::Status simulateEntry(absl::Span<const float> x, const SegmentEntry& e, size_t threads,
                           std::vector<uint32_t>* indices, std::vector<float>* values,
                           RadixSimStats* stats) {
  const size_t n = x.size(), blocks = e.blocks;
  RadixState state;
  state.kLeft = e.k;
  std::vector<uint32_t> hist(kBuckets, 0u);
  // Pass 0: grid-stride over x.
  histogramPass(x, blocks, threads, 0, state, &hist);
  if (absl::Status s = finishPass(hist, 0, &state); !s.ok()) return s;
  // Pass 1: each block's chunk in order, its survivors kept up to its room.
  const uint32_t chunk = selectChunk(e.n, e.blocks);
  const size_t room = survivorRoom(chunk);
  std::fill(hist.begin(), hist.end(), 0u);
  std::vector<BlockElements> elements(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    BlockElements kept;
    size_t survivors = 0;
    for (size_t i = b * chunk; i < std::min(n, (b + 1) * chunk); ++i) {
      const uint32_t key = magnitudeKey(x[i]);
      if (matchesPrefix(key, state)) ++hist[digitOf(key, 1)];
      if (survives(key, state) && survivors++ < room) {
        kept.index.push_back(static_cast<uint32_t>(i));
        kept.value.push_back(x[i]);
      }
    }
    if (survivors <= room) {
      elements[b] = std::move(kept);
      stats->survivors += survivors;
    } else {  // the block reads its chunk of x from here on
      ++stats->overflowedBlocks;
      for (size_t i = b * chunk; i < std::min(n, (b + 1) * chunk); ++i) {
        elements[b].index.push_back(static_cast<uint32_t>(i));
        elements[b].value.push_back(x[i]);
      }
    }
  }
  if (absl::Status s = finishPass(hist, 1, &state); !s.ok()) return s;
  // Pass 2: each block's elements.
  std::fill(hist.begin(), hist.end(), 0u);
  for (const BlockElements& block : elements) {
    for (float v : block.value) {
      const uint32_t key = magnitudeKey(v);
      if (matchesPrefix(key, state)) ++hist[digitOf(key, 2)];
    }
  }
  if (absl::Status s = finishPass(hist, 2, &state); !s.ok()) return s;
  // The selection by blocks: each block's counts, then each block's walk of its elements
  // with the counts of the segment's blocks before it.
  std::vector<ChunkCounts> counts(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    for (float v : elements[b].value) {
      const uint32_t key = magnitudeKey(v);
      counts[b].above += key > state.prefix;
      counts[b].ties += key == state.prefix;
    }
  }
  std::vector<bool> written(e.k, false);
  for (size_t b = 0; b < blocks; ++b) {
    uint32_t above = 0, tieRank = 0;
    for (size_t before = 0; before < b; ++before) {
      above += counts[before].above;
      tieRank += counts[before].ties;
    }
    for (size_t p = 0; p < elements[b].index.size(); ++p) {
      const uint32_t i = elements[b].index[p];
      const uint32_t key = magnitudeKey(elements[b].value[p]);
      if (isSelectedAt(key, tieRank, state)) {
        const uint32_t at = selectedPosition(above, tieRank, state);
        if (at >= e.k || written[at]) {
          return absl::InternalError(absl::StrCat("element ", i, " selected into slot ", at,
                                                  " (k = ", e.k, "), taken or out of range"));
        }
        written[at] = true;
        (*indices)[e.out + at] = i;
        (*values)[e.out + at] = elements[b].value[p];
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
  SegmentEntry e;
  e.n = static_cast<uint32_t>(x.size());
  e.k = static_cast<uint32_t>(k);
  e.blocks = static_cast<uint32_t>(blocks);
  return simulateEntry(x, e, threads, indices, values, stats);
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
  for (const SegmentEntry& e : plan->entries) {
    if (e.offset + e.n > x.size()) {
      return absl::InvalidArgumentError(absl::StrCat("segment [", e.offset, ", ", e.offset + e.n,
                                                     ") outside x of ", x.size()));
    }
    absl::Status s =
        simulateEntry(x.subspan(e.offset, e.n), e, threads, indices, values, stats);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace sparseps::gpu

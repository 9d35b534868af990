#include "compressors/cuda/radix_select_sim.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "compressors/cuda/radix_digits.h"

namespace sparseps::gpu {
namespace {

// One plan entry, as its blocks run it: x is the entry's segment, and its selection goes
// to slots [e.out, e.out + e.k) of indices and values.
absl::Status simulateEntry(absl::Span<const float> x, const SegmentEntry& e, size_t threads,
                           std::vector<uint32_t>* indices, std::vector<float>* values) {
  const size_t n = x.size(), blocks = e.blocks;
  RadixState state;
  state.kLeft = e.k;
  std::vector<uint32_t> hist(kBuckets);
  for (int pass = 0; pass < kRadixPasses; ++pass) {
    std::fill(hist.begin(), hist.end(), 0u);
    // Each block histograms its grid-stride share, then adds it to the segment's histogram.
    for (size_t b = 0; b < blocks; ++b) {
      std::vector<uint32_t> local(kBuckets, 0u);
      for (size_t start = b * threads; start < n; start += blocks * threads) {
        for (size_t i = start; i < std::min(n, start + threads); ++i) {
          const uint32_t key = magnitudeKey(x[i]);
          if (matchesPrefix(key, state)) ++local[digitOf(key, pass)];
        }
      }
      for (int d = 0; d < kBuckets; ++d) hist[d] += local[d];
    }
    // The last block: exclusive scan from the highest digit down, each bucket tested.
    int found = 0;
    uint32_t bucket = 0, bucketAbove = 0, above = 0;
    for (int d = kBuckets - 1; d >= 0; --d) {
      if (isTargetBucket(above, hist[d], state.kLeft)) {
        ++found;
        bucket = static_cast<uint32_t>(d);
        bucketAbove = above;
      }
      above += hist[d];
    }
    if (found != 1) {
      return absl::InternalError(absl::StrCat("radix pass ", pass, " found ", found,
                                              " target buckets for kLeft ", state.kLeft));
    }
    advanceState(&state, pass, bucket, bucketAbove);
  }
  // The selection by chunks: each block's counts, then each block's walk of its chunk
  // with the counts of the segment's blocks before it.
  const uint32_t chunk = selectChunk(e.n, e.blocks);
  std::vector<ChunkCounts> counts(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t i = b * chunk; i < std::min(n, (b + 1) * chunk); ++i) {
      const uint32_t key = magnitudeKey(x[i]);
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
    for (size_t i = b * chunk; i < std::min(n, (b + 1) * chunk); ++i) {
      const uint32_t key = magnitudeKey(x[i]);
      if (isSelectedAt(key, tieRank, state)) {
        const uint32_t at = selectedPosition(above, tieRank, state);
        if (at >= e.k || written[at]) {
          return absl::InternalError(absl::StrCat("element ", i, " selected into slot ", at,
                                                  " (k = ", e.k, "), taken or out of range"));
        }
        written[at] = true;
        (*indices)[e.out + at] = static_cast<uint32_t>(i);
        (*values)[e.out + at] = x[i];
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
                          std::vector<uint32_t>* indices, std::vector<float>* values) {
  k = std::min(k, x.size());
  indices->assign(k, 0);
  values->assign(k, 0.0f);
  if (k == 0) return absl::OkStatus();
  SegmentEntry e;
  e.n = static_cast<uint32_t>(x.size());
  e.k = static_cast<uint32_t>(k);
  e.blocks = static_cast<uint32_t>(blocks);
  return simulateEntry(x, e, threads, indices, values);
}

absl::Status segmentedTopkSim(absl::Span<const float> x,
                              const std::vector<SegmentRequest>& requests, size_t threads,
                              SegmentPlan* plan, std::vector<uint32_t>* indices,
                              std::vector<float>* values) {
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
    absl::Status s = simulateEntry(x.subspan(e.offset, e.n), e, threads, indices, values);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace sparseps::gpu

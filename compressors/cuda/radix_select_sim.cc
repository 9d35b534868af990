#include "compressors/cuda/radix_select_sim.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compressors/cuda/radix_digits.h"

namespace sparseps::gpu {

absl::Status radixTopkSim(absl::Span<const float> x, size_t k, size_t blocks, size_t threads,
                          std::vector<uint32_t>* indices, std::vector<float>* values) {
  indices->clear();
  values->clear();
  const size_t n = x.size();
  k = std::min(k, n);
  if (k == 0) return absl::OkStatus();
  RadixState state;
  state.kLeft = static_cast<uint32_t>(k);
  std::vector<uint32_t> hist(kBuckets);
  for (int pass = 0; pass < kRadixPasses; ++pass) {
    std::fill(hist.begin(), hist.end(), 0u);
    // Each block histograms its grid-stride share, then adds it to the global histogram.
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
  // with the counts of the blocks before it.
  const auto n32 = static_cast<uint32_t>(n);
  const uint32_t chunk = selectChunk(n32, static_cast<uint32_t>(blocks));
  std::vector<ChunkCounts> counts(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t i = b * chunk; i < std::min(n, (b + 1) * chunk); ++i) {
      const uint32_t key = magnitudeKey(x[i]);
      counts[b].above += key > state.prefix;
      counts[b].ties += key == state.prefix;
    }
  }
  indices->assign(k, 0);
  values->assign(k, 0.0f);
  std::vector<bool> written(k, false);
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
        if (at >= k || written[at]) {
          return absl::InternalError(absl::StrCat("element ", i, " selected into slot ", at,
                                                  " (k = ", k, "), taken or out of range"));
        }
        written[at] = true;
        (*indices)[at] = static_cast<uint32_t>(i);
        (*values)[at] = x[i];
      }
      above += key > state.prefix;
      tieRank += key == state.prefix;
    }
  }
  if (std::find(written.begin(), written.end(), false) != written.end()) {
    return absl::InternalError(absl::StrCat("fewer than k = ", k, " elements selected"));
  }
  return absl::OkStatus();
}

}  // namespace sparseps::gpu

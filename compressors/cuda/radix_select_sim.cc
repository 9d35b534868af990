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
  // Tie cut: the kLeft-th element with key == T in index order.
  uint32_t ties = 0;
  for (size_t i = 0; i < n && ties < state.kLeft; ++i) {
    if (isTie(magnitudeKey(x[i]), state) && ++ties == state.kLeft) {
      state.cutIndex = static_cast<uint32_t>(i);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (isSelected(magnitudeKey(x[i]), static_cast<uint32_t>(i), state)) {
      indices->push_back(static_cast<uint32_t>(i));
      values->push_back(x[i]);
    }
  }
  if (indices->size() != k) {
    return absl::InternalError(absl::StrCat("selected ", indices->size(), " of k = ", k));
  }
  return absl::OkStatus();
}

}  // namespace sparseps::gpu

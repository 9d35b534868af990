#include "compressors/topk.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compressors/segment_spec.h"
#include "compressors/select_kernels.h"

namespace sparseps {

namespace {

// Below this size a direct radix select (two passes, no sample) is as fast.
constexpr size_t kDirectBelow = size_t{1} << 16;
// Sample size: aim for an expected sample rank of the k-th largest of at least this.
constexpr double kTargetSampleRank = 64.0;
constexpr size_t kMinSample = 1u << 16;
// At most one sample per this many elements (4 cache lines): sampling stays cheap.
constexpr size_t kMinStride = 64;
// Bracket margin in standard deviations of the sample rank (binomial, ~sqrt(mean)).
constexpr double kMarginSigmas = 4.0;

// Lower bracket of the k-th largest key from a strided sample; 0 when the sample
// cannot bracket it (everything is a candidate).
uint32_t bracketKey(absl::Span<const float> x, size_t k) {
  size_t n = x.size();
  double want = std::max<double>(kMinSample, kTargetSampleRank * static_cast<double>(n) /
                                                  static_cast<double>(k));
  size_t m = std::min<size_t>(n / kMinStride, static_cast<size_t>(want));
  size_t stride = n / m;
  std::vector<float> sample(m);
  for (size_t j = 0, i = stride / 2; j < m; ++j, i += stride) sample[j] = x[i];
  double mean = static_cast<double>(k) * static_cast<double>(m) / static_cast<double>(n);
  double rank = std::ceil(mean + kMarginSigmas * std::sqrt(mean) + kMarginSigmas);
  if (rank >= static_cast<double>(m)) return 0;
  return kthLargestKey(sample, static_cast<size_t>(rank)).key;
}

}  // namespace

void topkExact(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
               std::vector<float>* values, SimdLevel level) {
  size_t n = x.size();
  k = std::min(k, n);
  indices->clear();
  values->clear();
  if (k == 0) return;
  if (k == n) {
    indices->resize(n);
    std::iota(indices->begin(), indices->end(), 0u);
    values->assign(x.begin(), x.end());
    return;
  }
  if (n < kDirectBelow) {
    emitTopk(x, k, indices, values);
    return;
  }
  uint32_t key_min = bracketKey(x, k);
  if (key_min == 0) {
    emitTopk(x, k, indices, values);
    return;
  }
  indices->reserve(2 * k + 64);
  values->reserve(2 * k + 64);
  appendAtLeast(x, key_min, 0, level, indices, values);
  if (indices->size() < k) {  // the bracket missed: exact select over everything
    emitTopk(x, k, indices, values);
    return;
  }
  keepTopkInPlace(k, indices, values);
}

void ExactTopkCompressor::compress(absl::Span<const float> x, double density,
                                   const SelectContext& ctx, SegmentData* out) const {
  out->segment_id = ctx.segment_id;
  out->numel = static_cast<uint32_t>(x.size());
  out->dense = false;
  topkExact(x, topkCount(x.size(), density), &out->indices, &out->values, level_);
}

}  // namespace sparseps

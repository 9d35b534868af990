#include "compressors/topk.h"

#include <algorithm>
#include <numeric>

#include "compressors/magnitude_key.h"
#include "compressors/segment_spec.h"
#include "compressors/select_kernels.h"

namespace sparseps {

namespace {

// Below this size a direct radix select (two passes, no sample) is as fast.
constexpr size_t kDirectBelow = size_t{1} << 16;

// The top-k of an x whose sample says that fewer than about k elements are nonzero (the
// k-th largest magnitude of the sample is 0), as in a residual that few updates touched:
// every nonzero, found in one streaming pass, then (when fewer than k) the lowest-index
// zeros, which are the ties the order picks. The radix select over all of x would spend
// several passes splitting millions of equal keys.
void topkOfMostlyZeros(absl::Span<const float> x, size_t k, SimdLevel level,
                       std::vector<uint32_t>* indices, std::vector<float>* values) {
  appendAtLeast(x, /*key_min=*/1, 0, level, indices, values);
  if (indices->size() >= k) {
    keepTopkInPlace(k, indices, values);
    return;
  }
  std::vector<uint32_t> nonzero_indices;
  std::vector<float> nonzero_values;
  nonzero_indices.swap(*indices);
  nonzero_values.swap(*values);
  indices->reserve(k);
  values->reserve(k);
  size_t zeros = k - nonzero_indices.size();
  size_t next = 0;  // next nonzero to merge
  for (size_t i = 0; indices->size() < k; ++i) {
    if (next < nonzero_indices.size() && nonzero_indices[next] == i) {
      indices->push_back(static_cast<uint32_t>(i));
      values->push_back(nonzero_values[next++]);
    } else if (zeros > 0 && magnitudeKey(x[i]) == 0) {
      indices->push_back(static_cast<uint32_t>(i));
      values->push_back(x[i]);
      --zeros;
    }
  }
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
    // For a sparse selection the sample always has room for its bracket rank, so a 0
    // there means the sample's k-th largest is zero.
    if (k * 8 < n) {
      topkOfMostlyZeros(x, k, level, indices, values);
    } else {
      emitTopk(x, k, indices, values);
    }
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

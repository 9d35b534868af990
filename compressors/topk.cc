#include "compressors/topk.h"

#include <algorithm>
#include <numeric>

#include "compressors/segment_spec.h"
#include "compressors/select_kernels.h"

namespace sparseps {

namespace {

// Below this size a direct radix select (two passes, no sample) is as fast.
constexpr size_t kDirectBelow = size_t{1} << 16;

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

#include "compressors/threshold.h"

#include <algorithm>
#include <cmath>

#include "compressors/magnitude_key.h"
#include "compressors/segment_spec.h"
#include "compressors/select_kernels.h"
#include "compressors/select_seed.h"

namespace sparseps {

void thresholdFilter(absl::Span<const float> x, float thr, std::vector<uint32_t>* indices,
                     std::vector<float>* values, SimdLevel level) {
  indices->clear();
  values->clear();
  appendAtLeast(x, magnitudeKey(thr), 0, level, indices, values);
}

SampledThresholdResult sampledThreshold(absl::Span<const float> x, double density,
                                        uint64_t random_bits, std::vector<uint32_t>* indices,
                                        std::vector<float>* values,
                                        const SampledThresholdOptions& options,
                                        SimdLevel level) {
  SampledThresholdResult r;
  size_t n = x.size();
  r.k = topkCount(n, density);
  indices->clear();
  values->clear();
  if (r.k == 0) return r;

  // The sample: ~sample_ratio of n, but at least enough that its top ceil(samples * r)
  // holds 2 elements (as DGC's implementation does); all of x when that is everything.
  size_t want = std::max<size_t>(
      static_cast<size_t>(std::ceil(static_cast<double>(n) * options.sample_ratio)),
      static_cast<size_t>(std::ceil(2.0 / std::max(density, 1e-12))));
  std::vector<float> sample;
  if (want >= n) {
    sample.assign(x.begin(), x.end());
  } else {
    size_t stride = n / want;
    uint64_t state = random_bits;
    size_t start = static_cast<size_t>(boundedRandom(&state, stride));
    sample.reserve((n - start + stride - 1) / stride);
    for (size_t i = start; i < n; i += stride) sample.push_back(x[i]);
  }
  size_t top = static_cast<size_t>(std::ceil(static_cast<double>(sample.size()) * density));
  top = std::clamp<size_t>(top, 1, sample.size());
  float thr = keyToFloat(kthLargestKey(sample, top).key);

  const double upper = options.upper * static_cast<double>(r.k);
  const double lower = options.lower * static_cast<double>(r.k);
  for (int round = 0; round < options.max_rounds; ++round) {
    thresholdFilter(x, thr, indices, values, level);
    r.rounds = round + 1;
    double count = static_cast<double>(indices->size());
    if (count > upper) {
      keepTopkInPlace(r.k, indices, values);
      r.exact = true;
      break;
    }
    if (count >= lower) break;
    if (round + 1 < options.max_rounds) thr *= static_cast<float>(options.decay);
  }
  if (indices->size() > r.k) {  // truncate to the first k by index
    indices->resize(r.k);
    values->resize(r.k);
  }
  r.threshold = thr;
  r.count = indices->size();
  return r;
}

void SampledThresholdCompressor::compress(absl::Span<const float> x, double density,
                                          const SelectContext& ctx, SegmentData* out) const {
  out->segment_id = ctx.segment_id;
  out->numel = static_cast<uint32_t>(x.size());
  out->dense = false;
  sampledThreshold(x, density, selectSeed(ctx), &out->indices, &out->values, options_, level_);
}

}  // namespace sparseps

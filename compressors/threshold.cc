#include "compressors/threshold.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "compressors/kernels/device_kernels.h"
#include "compressors/kernels/magnitude_key.h"
#include "compressors/kernels/select_kernels.h"
#include "compressors/registry.h"
#include "compressors/segment_spec.h"
#include "compressors/select_seed.h"

namespace sparseps {

void thresholdFilter(absl::Span<const float> x, float thr, std::vector<uint32_t>* indices,
                     std::vector<float>* values, SimdLevel level) {
  indices->clear();
  values->clear();
  appendAtLeast(x, magnitudeKey(thr), 0, level, indices, values);
}

DgcSamplePlan dgcSamplePlan(size_t n, double density, uint64_t random_bits,
                            const SampledThresholdOptions& options) {
  DgcSamplePlan plan;
  if (n == 0) return plan;
  size_t want = std::max<size_t>(
      static_cast<size_t>(std::ceil(static_cast<double>(n) * options.sample_ratio)),
      static_cast<size_t>(std::ceil(2.0 / std::max(density, 1e-12))));
  if (want < n) {
    plan.stride = n / want;
    uint64_t state = random_bits;
    plan.start = static_cast<size_t>(boundedRandom(&state, plan.stride));
  }
  plan.count = (n - plan.start + plan.stride - 1) / plan.stride;
  plan.top = static_cast<size_t>(std::ceil(static_cast<double>(plan.count) * density));
  plan.top = std::clamp<size_t>(plan.top, 1, plan.count);
  return plan;
}

std::vector<float> sampledLadder(float first, const SampledThresholdOptions& options) {
  std::vector<float> ladder;
  float thr = first;
  for (int round = 0; round < options.max_rounds; ++round) {
    ladder.push_back(thr);
    thr *= static_cast<float>(options.decay);
  }
  return ladder;
}

SampledThresholdResult playSampledRounds(absl::Span<const float> ladder, size_t k,
                                         absl::FunctionRef<size_t(int round)> passed,
                                         const SampledThresholdOptions& options) {
  SampledThresholdResult r;
  r.k = k;
  if (ladder.empty()) return r;
  const double upper = options.upper * static_cast<double>(k);
  const double lower = options.lower * static_cast<double>(k);
  for (const float thr : ladder) {
    r.threshold = thr;
    r.count = passed(r.rounds++);
    if (static_cast<double>(r.count) > upper) {
      r.exact = true;
      break;
    }
    if (static_cast<double>(r.count) >= lower) break;
  }
  return r;
}

namespace {

// Below this size the plain rule (sample, then filter passes) is as fast.
constexpr size_t kFuseBelow = size_t{1} << 16;

size_t countAtLeast(const std::vector<float>& values, uint32_t key_min) {
  size_t c = 0;
  for (float v : values) c += magnitudeKey(v) >= key_min;
  return c;
}

// Keeps, in order, the entries whose key >= key_min. Branchless: every entry is written at
// the cursor, which advances only past kept ones (w <= j, so nothing unread is overwritten);
// a branch would be mispredicted for a good share of the candidates.
void compactAtLeast(uint32_t key_min, std::vector<uint32_t>* indices, std::vector<float>* values) {
  uint32_t* idx = indices->data();
  float* val = values->data();
  size_t w = 0;
  for (size_t j = 0; j < values->size(); ++j) {
    float v = val[j];
    idx[w] = idx[j];
    val[w] = v;
    w += magnitudeKey(v) >= key_min;
  }
  indices->resize(w);
  values->resize(w);
}

}  // namespace

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
  DgcSamplePlan plan = dgcSamplePlan(n, density, random_bits, options);
  // Filled by index (no per-element capacity check): exactly plan.count elements.
  std::unique_ptr<float[]> sample(new float[plan.count]);
  size_t taken = 0;

  // (indices, values) hold candidates: every element whose key >= `floor`. With a
  // provisional bracket they are gathered in the same pass as the sample. The bracket
  // aims past the k-th largest by the 4-sigma noise of the sample's rank `top`, so the
  // first threshold lies above it with high probability.
  bool have_candidates = false;
  uint32_t floor = 0;
  double reach = 1.0 + 4.0 / std::sqrt(static_cast<double>(plan.top)) + 4.0 / static_cast<double>(plan.top);
  size_t bracket_k = static_cast<size_t>(std::ceil(reach * static_cast<double>(r.k)));
  if (n >= kFuseBelow && bracket_k < n / 2) floor = bracketKey(x, bracket_k);
  if (floor > 0) {
    // Locals, not the captures, drive the copy: through the captures every step would
    // reload and store its counters (they might alias the sample), ~5x slower.
    size_t next = plan.start;
    appendAtLeast(x, floor, 0, level, indices, values, [&](size_t, size_t end) {
      const float* src = x.data();
      float* dst = sample.get() + taken;
      const size_t stride = plan.stride;
      size_t i = next;
      for (; i < end; i += stride) *dst++ = src[i];
      taken = static_cast<size_t>(dst - sample.get());
      next = i;
    });
    have_candidates = true;
  } else {
    for (size_t i = plan.start; i < n; i += plan.stride) sample[taken++] = x[i];
  }
  const float first = keyToFloat(selectKey({sample.get(), taken}, plan.top, level).key);
  const std::vector<float> ladder = sampledLadder(first, options);
  // The rounds need only counts; the candidates are narrowed once at the end.
  r = playSampledRounds(
      ladder, r.k,
      [&](int round) {
        const uint32_t key = magnitudeKey(ladder[round]);
        if (have_candidates && key >= floor) return countAtLeast(*values, key);
        thresholdFilter(x, ladder[round], indices, values, level);  // below the candidates
        have_candidates = true;
        floor = key;
        return indices->size();
      },
      options);
  if (ladder.empty()) r.threshold = first;  // no round: the sample's threshold stands
  const uint32_t key = magnitudeKey(r.threshold);
  if (key > floor) compactAtLeast(key, indices, values);
  if (r.exact) keepTopkInPlace(r.k, indices, values);
  if (indices->size() > r.k) {  // truncate to the first k by index
    indices->resize(r.k);
    values->resize(r.k);
  }
  r.count = indices->size();
  return r;
}

void SampledThresholdCompressor::compress(absl::Span<const float> x, double density,
                                          const SelectContext& ctx, SegmentData* out) const {
  if (deviceKernelsFor(x.data()) != nullptr) {
    const SegmentSelect whole{0, x.size(), density, ctx, out};
    compressSegments(x, {&whole, 1});
    return;
  }
  out->startSparse(ctx.segment_id, x.size());
  sampledThreshold(x, density, selectSeed(ctx), &out->indices, &out->values, options_, level_);
}

void SampledThresholdCompressor::compressSegments(absl::Span<const float> x,
                                                  absl::Span<const SegmentSelect> segments) const {
  DeviceKernels* gpu = deviceKernelsFor(x.data());
  if (gpu == nullptr) {
    Compressor::compressSegments(x, segments);
    return;
  }
  std::vector<SampledSegment> asked;
  asked.reserve(segments.size());
  for (const SegmentSelect& s : segments) {
    s.out->startSparse(s.ctx.segment_id, s.numel);
    asked.push_back(SampledSegment{s.offset, s.numel, s.density, selectSeed(s.ctx), &s.out->indices,
                                   &s.out->values});
  }
  requireDeviceOk(gpu->sampledThresholdSegments(x, asked, options_), "the sampled threshold");
}

namespace builtin_compressors {

std::vector<CompressorInfo> threshold() {
  return {{"sampled",
           "DGC's sampled threshold: about the top density * numel by magnitude, from a 1% "
           "sample (sparse)",
           "Lin et al., Deep Gradient Compression, ICLR 2018",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<SampledThresholdCompressor>();
           }}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

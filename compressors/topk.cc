#include "compressors/topk.h"

#include <algorithm>
#include <numeric>

#include "compressors/kernels/device_kernels.h"
#include "compressors/kernels/magnitude_key.h"
#include "compressors/kernels/select_kernels.h"
#include "compressors/registry.h"
#include "compressors/segment_spec.h"

namespace sparseps {

namespace {

// Below this size a direct radix select is as fast; above it a sample's bracket and one
// vectorized pass leave few candidates. The small segments of a small model gain most:
// at ResNet-20's layout (bench_cycle) the dgs shard's server phase fell from 61 to 10
// read passes when this moved from 2^16 down to 2^10 (2^9 to 2^11 did alike, 2^12 and
// 2^13 worse). A sample of a few runs can misjudge a structured segment; the result stays
// exact (a missed bracket selects over everything), only slower.
constexpr size_t kDirectBelow = size_t{1} << 10;

// x itself as a StreamedVector: nothing to compute.
class SpanVector final : public StreamedVector {
 public:
  explicit SpanVector(absl::Span<const float> x) : x_(x) {}
  size_t size() const override { return x_.size(); }
  const float* produce(size_t begin, size_t) override { return x_.data() + begin; }
  void peek(size_t begin, size_t end, float* out) const override {
    std::copy(x_.begin() + begin, x_.begin() + end, out);
  }
  absl::Span<const float> whole() override { return x_; }

 private:
  absl::Span<const float> x_;
};

// Completes the top-k of an x with fewer than k nonzeros, given all of them (in index
// order): the ties the order picks are the lowest-index zeros.
void addLowestZeros(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
                    std::vector<float>* values) {
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

void topkStreamed(StreamedVector& x, size_t k, std::vector<uint32_t>* indices,
                  std::vector<float>* values, SimdLevel level) {
  const size_t n = x.size();
  k = std::min(k, n);
  indices->clear();
  values->clear();
  const bool sampled = n >= kDirectBelow && k > 0 && k < n;
  const uint32_t bracket = sampled ? bracketKey(n, k, [&x](size_t begin, size_t end, float* out) {
    x.peek(begin, end, out);
  }) : 0;
  // A zero bracket on a sparse selection: the sample's k-th largest is zero (the sample
  // always has room for its bracket rank then), as in a residual few updates touched.
  // The radix select over all of x would spend several passes splitting millions of equal
  // keys; one streaming pass collects the nonzeros instead.
  const bool mostly_zeros = sampled && bracket == 0 && k * 8 < n;
  if (bracket == 0 && !mostly_zeros) {
    produceAll(x);
    if (k == n) {
      indices->resize(n);
      std::iota(indices->begin(), indices->end(), 0u);
      const absl::Span<const float> all = x.whole();
      values->assign(all.begin(), all.end());
    } else if (k > 0) {
      emitTopk(x.whole(), k, indices, values);
    }
    return;
  }
  indices->reserve(2 * k + 64);
  values->reserve(2 * k + 64);
  appendAtLeast(x, mostly_zeros ? 1 : bracket, level, indices, values);
  if (indices->size() >= k) {
    keepTopkInPlace(k, indices, values);
  } else if (mostly_zeros) {
    addLowestZeros(x.whole(), k, indices, values);
  } else {  // the bracket missed: exact select over everything
    emitTopk(x.whole(), k, indices, values);
  }
}

}  // namespace

void topkExact(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
               std::vector<float>* values, SimdLevel level) {
  SpanVector v(x);
  topkStreamed(v, k, indices, values, level);
}

void ExactTopkCompressor::compress(absl::Span<const float> x, double density,
                                   const SelectContext& ctx, SegmentData* out) const {
  if (DeviceKernels* gpu = deviceKernelsFor(x.data())) {
    out->startSparse(ctx.segment_id, x.size());
    requireDeviceOk(gpu->topk(x, topkCount(x.size(), density), &out->indices, &out->values),
                    "top-k");
    return;
  }
  SpanVector v(x);
  compressStreamed(v, density, ctx, out);
}

void ExactTopkCompressor::compressStreamed(StreamedVector& x, double density,
                                           const SelectContext& ctx, SegmentData* out) const {
  out->startSparse(ctx.segment_id, x.size());
  topkStreamed(x, topkCount(x.size(), density), &out->indices, &out->values, level_);
}

void ExactTopkCompressor::compressSegments(absl::Span<const float> x,
                                           absl::Span<const SegmentSelect> segments) const {
  DeviceKernels* gpu = x.empty() ? nullptr : deviceKernelsFor(x.data());
  if (gpu == nullptr) {
    Compressor::compressSegments(x, segments);
    return;
  }
  std::vector<TopkSegment> requests;
  requests.reserve(segments.size());
  for (const SegmentSelect& s : segments) {
    s.out->startSparse(s.ctx.segment_id, s.numel);
    requests.push_back(TopkSegment{s.offset, s.numel, topkCount(s.numel, s.density),
                                   &s.out->indices, &s.out->values});
  }
  requireDeviceOk(gpu->topkSegments(x, requests), "top-k of a step's segments");
}

namespace builtin_compressors {

std::vector<CompressorInfo> topk() {
  return {{"topk", "the k = density * numel elements of largest magnitude, exactly (sparse)",
           "Aji & Heafield, Sparse Communication for Distributed Gradient Descent, EMNLP 2017",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<ExactTopkCompressor>();
           }}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

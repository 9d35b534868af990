#include "compressors/vector_ops.h"

#include <cstring>

#include "compressors/apply.h"

namespace sparseps {
namespace {

class HostVectorOps final : public VectorOps {
 public:
  bool device() const override { return false; }

  FloatArray zeros(size_t n) const override {
    float* p = n == 0 ? nullptr : new float[n]();
    return FloatArray(p, n, [](float* q) { delete[] q; });
  }

  void fold(absl::Span<float> out, float b, absl::Span<const float> g, absl::Span<const float> w,
            float wd) const override {
    for (size_t j = 0; j < out.size(); ++j) out[j] = b * (g[j] + wd * w[j]);
  }

  void accumulate(absl::Span<float> y, float a, float b, absl::Span<const float> g,
                  absl::Span<const float> w, float wd) const override {
    for (size_t j = 0; j < y.size(); ++j) y[j] = a * y[j] + b * (g[j] + wd * w[j]);
  }

  void scale(absl::Span<float> y, float a) const override {
    for (float& x : y) x *= a;
  }

  void combine(absl::Span<float> out, float a, absl::Span<const float> x, float b,
               absl::Span<const float> z) const override {
    for (size_t j = 0; j < out.size(); ++j) out[j] = a * x[j] + b * z[j];
  }

  double sumSquares(absl::Span<const float> g, absl::Span<const float> w, float wd) const override {
    double sum = 0.0;
    for (size_t j = 0; j < g.size(); ++j) {
      const double x = g[j] + wd * w[j];
      sum += x * x;
    }
    return sum;
  }

  void scaleAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float a) const override {
    for (uint32_t i : idx) y[i] *= a;
  }

  void fillAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float value) const override {
    for (uint32_t i : idx) y[i] = value;
  }

  void setAt(absl::Span<float> y, absl::Span<const uint32_t> idx,
             absl::Span<const float> values) const override {
    for (size_t t = 0; t < idx.size(); ++t) y[idx[t]] = values[t];
  }

  void addSegment(absl::Span<float> y, const SegmentData& s, float scale) const override {
    scatterAdd(y, s, scale);
  }

  void setSegment(absl::Span<float> y, const SegmentData& s) const override { copyDense(s, y); }

  void copyOut(absl::Span<float> host, absl::Span<const float> x, float scale) const override {
    if (scale == 1.0f) {
      if (!x.empty()) std::memcpy(host.data(), x.data(), x.size() * sizeof(float));
      return;
    }
    for (size_t j = 0; j < x.size(); ++j) host[j] = scale * x[j];
  }

  void copyIn(absl::Span<float> y, absl::Span<const float> host) const override {
    if (!y.empty()) std::memcpy(y.data(), host.data(), y.size() * sizeof(float));
  }
};

}  // namespace

std::shared_ptr<const VectorOps> hostVectorOps() {
  static const std::shared_ptr<const VectorOps> ops = std::make_shared<HostVectorOps>();
  return ops;
}

}  // namespace sparseps

#include "compressors/vector_ops.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "compressors/apply.h"

namespace sparseps {
namespace {

// The loops below run over raw pointers held in locals: a span's checked operator[] and
// members reloaded through `this` would keep the compiler from vectorizing them.

// One segment of updateAndSelect's vector on the host: y[idx] *= c, then
// y = a*y + b*(g + wd*w), made one chunk at a time as the selection asks for it. y, g and w
// are the segment's parts, idx its positions within it.
class UpdatedVector final : public StreamedVector {
 public:
  UpdatedVector(absl::Span<float> y, absl::Span<const uint32_t> idx, float c, float a, float b,
                const float* g, const float* w, float wd)
      : y_(y), idx_(idx), c_(c), a_(a), b_(b), g_(g), w_(w), wd_(wd) {}
  size_t size() const override { return y_.size(); }
  const float* produce(size_t begin, size_t end) override {
    float* y = y_.data();
    for (; next_ < idx_.size() && idx_[next_] < end; ++next_) y[idx_[next_]] *= c_;
    const float* g = g_;
    const float* w = w_;
    const float a = a_, b = b_, wd = wd_;
    for (size_t j = begin; j < end; ++j) y[j] = a * y[j] + b * (g[j] + wd * w[j]);
    return y + begin;
  }
  void peek(size_t begin, size_t end, float* out) const override {
    const float* y = y_.data();
    for (size_t j = begin; j < end; ++j) out[j - begin] = update(y[j], j);
    for (auto it = std::lower_bound(idx_.begin(), idx_.end(), begin); it != idx_.end() && *it < end;
         ++it) {
      out[*it - begin] = update(c_ * y[*it], *it);
    }
  }
  absl::Span<const float> whole() override { return y_; }

 private:
  float update(float y, size_t j) const { return a_ * y + b_ * (g_[j] + wd_ * w_[j]); }

  absl::Span<float> y_;
  absl::Span<const uint32_t> idx_;
  float c_, a_, b_;
  const float* g_;
  const float* w_;
  float wd_;
  size_t next_ = 0;
};

// The positions of idx (increasing) in [begin, end), made relative to begin.
void positionsIn(absl::Span<const uint32_t> idx, size_t begin, size_t end,
                 std::vector<uint32_t>* out) {
  for (auto it = std::lower_bound(idx.begin(), idx.end(), begin); it != idx.end() && *it < end;
       ++it) {
    out->push_back(static_cast<uint32_t>(*it - begin));
  }
}

class HostVectorOps final : public VectorOps {
 public:
  bool device() const override { return false; }

  FloatArray zeros(size_t n) const override {
    float* p = n == 0 ? nullptr : new float[n]();
    return FloatArray(p, n, [](float* q) { delete[] q; });
  }

  void fold(absl::Span<float> out, float b, absl::Span<const float> g, absl::Span<const float> w,
            float wd) const override {
    float* o = out.data();
    const float* gp = g.data();
    const float* wp = w.data();
    const size_t n = out.size();
    for (size_t j = 0; j < n; ++j) o[j] = b * (gp[j] + wd * wp[j]);
  }

  void accumulate(absl::Span<float> y, float a, float b, absl::Span<const float> g,
                  absl::Span<const float> w, float wd) const override {
    float* yp = y.data();
    const float* gp = g.data();
    const float* wp = w.data();
    const size_t n = y.size();
    for (size_t j = 0; j < n; ++j) yp[j] = a * yp[j] + b * (gp[j] + wd * wp[j]);
  }

  void scale(absl::Span<float> y, float a) const override {
    float* yp = y.data();
    const size_t n = y.size();
    for (size_t j = 0; j < n; ++j) yp[j] *= a;
  }

  void combine(absl::Span<float> out, float a, absl::Span<const float> x, float b,
               absl::Span<const float> z) const override {
    float* o = out.data();
    const float* xp = x.data();
    const float* zp = z.data();
    const size_t n = out.size();
    for (size_t j = 0; j < n; ++j) o[j] = a * xp[j] + b * zp[j];
  }

  double sumSquares(absl::Span<const float> g, absl::Span<const float> w, float wd) const override {
    const float* gp = g.data();
    const float* wp = w.data();
    const size_t n = g.size();
    double sum = 0.0;
    for (size_t j = 0; j < n; ++j) {
      const double x = gp[j] + wd * wp[j];
      sum += x * x;
    }
    return sum;
  }

  void updateAndSelect(absl::Span<float> y, absl::Span<const uint32_t> idx, float c, float a,
                       float b, absl::Span<const float> g, absl::Span<const float> w, float wd,
                       const Compressor& selector,
                       absl::Span<const SegmentSelect> segments) const override {
    std::vector<uint32_t> local;
    // y[begin, end) as its update makes it (local: its positions of idx).
    auto updated = [&](size_t begin, size_t end) {
      local.clear();
      positionsIn(idx, begin, end, &local);
      return UpdatedVector(y.subspan(begin, end - begin), local, c, a, b, g.data() + begin,
                           w.data() + begin, wd);
    };
    for (const SegmentSelect& s : segments) {
      UpdatedVector x = updated(s.offset, s.offset + s.numel);
      selector.compressStreamed(x, s.density, s.ctx, s.out);
    }
  }

  void scaleAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float a) const override {
    float* yp = y.data();
    for (uint32_t i : idx) yp[i] *= a;
  }

  void fillAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float value) const override {
    float* yp = y.data();
    for (uint32_t i : idx) yp[i] = value;
  }

  void setAt(absl::Span<float> y, absl::Span<const uint32_t> idx,
             absl::Span<const float> values) const override {
    float* yp = y.data();
    for (size_t t = 0; t < idx.size(); ++t) yp[idx[t]] = values[t];
  }

  void applySegments(absl::Span<float> y, absl::Span<const Placed> segments, float scale,
                     Dense dense) const override {
    for (const Placed& p : segments) {
      absl::Span<float> part = y.subspan(p.offset, p.s->numel);
      if (p.s->dense && dense == Dense::kSet) {
        copyDense(*p.s, part);
      } else {
        scatterAdd(part, *p.s, scale);
      }
    }
  }

  void copyOut(absl::Span<const HostCopy> copies, float wd) const override {
    for (const HostCopy& c : copies) {
      if (c.x.empty()) continue;
      if (wd != 0.0f) {
        fold(c.host.subspan(0, c.x.size()), c.scale, c.x, c.w, wd);
        continue;
      }
      if (c.scale == 1.0f) {
        std::memcpy(c.host.data(), c.x.data(), c.x.size() * sizeof(float));
        continue;
      }
      float* o = c.host.data();
      const float* xp = c.x.data();
      const float scale = c.scale;
      const size_t n = c.x.size();
      for (size_t j = 0; j < n; ++j) o[j] = scale * xp[j];
    }
  }

  void copyIn(absl::Span<float> y, absl::Span<const float> host) const override {
    if (!y.empty()) std::memcpy(y.data(), host.data(), y.size() * sizeof(float));
  }
};

}  // namespace

void VectorOps::updateAndSelect(absl::Span<float> y, absl::Span<const uint32_t> idx, float c,
                                float a, float b, absl::Span<const float> g,
                                absl::Span<const float> w, float wd, const Compressor& selector,
                                absl::Span<const SegmentSelect> segments) const {
  scaleAt(y, idx, c);
  accumulateSegments(y, a, b, g, w, wd, segments);
  selector.compressSegments(y, segments);
}

void VectorOps::accumulateSegments(absl::Span<float> y, float a, float b, absl::Span<const float> g,
                                   absl::Span<const float> w, float wd,
                                   absl::Span<const SegmentSelect> segments) const {
  for (const SegmentSelect& s : segments) {
    absl::Span<float> part = y.subspan(s.offset, s.numel);
    if (wd == 0.0f) {
      combine(part, a, part, b, g.subspan(s.offset, s.numel));
    } else {
      accumulate(part, a, b, g.subspan(s.offset, s.numel), w.subspan(s.offset, s.numel), wd);
    }
  }
}

std::shared_ptr<const VectorOps> hostVectorOps() {
  static const std::shared_ptr<const VectorOps> ops = std::make_shared<HostVectorOps>();
  return ops;
}

}  // namespace sparseps

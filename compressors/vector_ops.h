#pragma once
// VectorOps: the element-wise work of a worker rule (docs/methods.md) on float vectors that
// live in one memory, host or a GPU's. A method's rule is written once in these operations
// and the selectors (which already run on either memory: compressors/kernels/device_kernels.h),
// so the same rule serves CPU and GPU workers: hostVectorOps() runs the CPU loops here,
// compressors/cuda's makeCudaVectorOps a GPU's kernels. Vectors given to an operation are
// spans of the ops' memory (never read on the host when that is a GPU's); what travels
// (SegmentData, indices, values) is always host memory, and the operations that take it
// copy it over.
// Device operations are queued on the device's default stream in call order; the ones
// that give the host a result (copyOut, sumSquares, a selection) wait for it. The ones that
// take host indices or values copy them over without waiting.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "absl/types/span.h"
#include "compressors/compressor.h"
#include "compressors/segment_data.h"

namespace sparseps {

// n floats in one VectorOps' memory, freed by it; move-only.
class FloatArray {
 public:
  FloatArray() = default;
  FloatArray(float* data, size_t size, std::function<void(float*)> free)
      : data_(data), size_(size), free_(std::move(free)) {}
  FloatArray(FloatArray&& other) noexcept { swap(other); }
  FloatArray& operator=(FloatArray&& other) noexcept {
    FloatArray(std::move(other)).swap(*this);
    return *this;
  }
  FloatArray(const FloatArray&) = delete;
  FloatArray& operator=(const FloatArray&) = delete;
  ~FloatArray() {
    if (data_ != nullptr && free_) free_(data_);
  }

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }
  absl::Span<float> span() { return {data_, size_}; }
  absl::Span<const float> span() const { return {data_, size_}; }

 private:
  void swap(FloatArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(free_, other.free_);
  }
  float* data_ = nullptr;
  size_t size_ = 0;
  std::function<void(float*)> free_;
};

class VectorOps {
 public:
  virtual ~VectorOps() = default;
  // True for a GPU's memory.
  virtual bool device() const = 0;
  // n zeros in this memory.
  virtual FloatArray zeros(size_t n) const = 0;

  // The equal-length spans below may alias where the same name appears on both sides.
  //   out = b * (g + wd * w)                   (the gradient with weight decay folded in)
  virtual void fold(absl::Span<float> out, float b, absl::Span<const float> g,
                    absl::Span<const float> w, float wd) const = 0;
  //   y = a * y + b * (g + wd * w)
  virtual void accumulate(absl::Span<float> y, float a, float b, absl::Span<const float> g,
                          absl::Span<const float> w, float wd) const = 0;
  // accumulate over each segment's part [offset, offset + numel) of the flat y, g and w
  // (segments apart): a step's segments in one call, on a GPU one launch. With wd == 0, w
  // is not read (it may be empty): y = a * y + b * g. a is not 0 (to set y, fold it).
  virtual void accumulateSegments(absl::Span<float> y, float a, float b, absl::Span<const float> g,
                                  absl::Span<const float> w, float wd,
                                  absl::Span<const SegmentSelect> segments) const;
  //   y = a * y
  virtual void scale(absl::Span<float> y, float a) const = 0;
  //   out = a * x + b * z
  virtual void combine(absl::Span<float> out, float a, absl::Span<const float> x, float b,
                       absl::Span<const float> z) const = 0;
  //   sum of (g + wd * w)^2, in double
  virtual double sumSquares(absl::Span<const float> g, absl::Span<const float> w,
                            float wd) const = 0;
  // A momentum-like vector made and selected from together (DGS's SAMomentum step), for a
  // whole step at once: y, g and w are flat vectors (w read even with wd == 0), idx
  // positions in y (increasing, inside the segments), and over each segment's part of them
  // (in increasing offset order, apart)
  //   y[idx] = c * y[idx];  y = a * y + b * (g + wd * w);
  //   *out = selector's selection of the segment's part of y.
  // The parts between segments are left alone. By default (a GPU's) the update is two
  // operations (scaleAt, accumulateSegments; a is not 0) and the selector then selects all
  // segments together (Compressor::compressSegments). On the host each segment's selection
  // reads it chunk by chunk as the update makes it, one pass over memory instead of three
  // (compressors/compressor.h's StreamedVector).
  virtual void updateAndSelect(absl::Span<float> y, absl::Span<const uint32_t> idx, float c,
                               float a, float b, absl::Span<const float> g,
                               absl::Span<const float> w, float wd, const Compressor& selector,
                               absl::Span<const SegmentSelect> segments) const;

  // At host indices (each < y.size(), distinct):
  //   y[idx] = a * y[idx];   y[idx] = value;   y[idx_t] = values_t
  virtual void scaleAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float a) const = 0;
  virtual void fillAt(absl::Span<float> y, absl::Span<const uint32_t> idx, float value) const = 0;
  virtual void setAt(absl::Span<float> y, absl::Span<const uint32_t> idx,
                     absl::Span<const float> values) const = 0;

  // What travelled, applied to a flat y, each segment at y[offset, offset + s.numel)
  // (compressors/apply.h's semantics): y += scale * s (s dense or sparse; coded on the host
  // only), or with kSet a dense s replaces it: y = s (owned or borrowed). A step's segments
  // go in one call: on a GPU one copy over and one launch for all the sparse ones.
  enum class Dense { kAdd, kSet };
  struct Placed {
    size_t offset = 0;
    const SegmentData* s = nullptr;
  };
  virtual void applySegments(absl::Span<float> y, absl::Span<const Placed> segments, float scale,
                             Dense dense) const = 0;

  //   host = scale * (x + wd * w) for each copy (host: host memory of x.size() floats, w of
  //   as many in this memory; with wd == 0 w is not read and may be empty); waits for the x.
  //   A step's copies go in one call: on a GPU one copy back and one wait for all, and a
  //   gradient folded on its way out (pushing a part of it) costs no pass of its own.
  struct HostCopy {
    absl::Span<float> host;
    absl::Span<const float> x;
    float scale = 1.0f;
    absl::Span<const float> w = {};
  };
  virtual void copyOut(absl::Span<const HostCopy> copies, float wd) const = 0;
  //   y = host, host memory of y.size() floats
  virtual void copyIn(absl::Span<float> y, absl::Span<const float> host) const = 0;
};

// The CPU loops, for vectors in host memory (one instance; it keeps no state).
std::shared_ptr<const VectorOps> hostVectorOps();

}  // namespace sparseps

#include "compressors/apply.h"

#include <cassert>
#include <cstddef>
#include <cstring>

#include "compressors/codes.h"
#include "compressors/kernels/simd.h"

namespace sparseps {

namespace {

SPARSEPS_MULTIVERSION void axpyKernel(float a, const float* __restrict x, float* __restrict y,
                                      size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// y += a * x where x is little-endian f32 bytes at any alignment (a borrowed dense
// segment): each load is a memcpy, which the compiler turns into unaligned vector loads.
SPARSEPS_MULTIVERSION void axpyBytesKernel(float a, const uint8_t* __restrict x,
                                           float* __restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, x + 4 * i, sizeof v);
    y[i] += a * v;
  }
}

SPARSEPS_MULTIVERSION void scatterKernel(float a, const uint32_t* __restrict idx,
                                         const float* __restrict v, float* __restrict y,
                                         size_t n) {
  for (size_t j = 0; j < n; ++j) y[idx[j]] += a * v[j];
}

// A sum of squares over kLanes independent partial sums, so that the loop is not one chain
// of dependent additions (the compiler may not reorder a floating-point sum). The lanes are
// floats, as wide as the vectors go, and are summed in double at the end: a norm that
// decides whether to clip needs no more than float's precision per lane.
constexpr size_t kLanes = 64;

template <typename Load>
inline double sumSquares(Load load, size_t n) {
  float lanes[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      const float v = load(i + j);
      lanes[j] += v * v;
    }
  }
  for (; i < n; ++i) {
    const float v = load(i);
    lanes[0] += v * v;
  }
  double sum = 0;
  for (float l : lanes) sum += l;
  return sum;
}

SPARSEPS_MULTIVERSION double squaresKernel(const float* __restrict x, size_t n) {
  return sumSquares([x](size_t i) { return x[i]; }, n);
}

// The same over little-endian f32 bytes at any alignment (a borrowed dense segment).
SPARSEPS_MULTIVERSION double squaresBytesKernel(const uint8_t* __restrict x, size_t n) {
  return sumSquares(
      [x](size_t i) {
        float v;
        std::memcpy(&v, x + 4 * i, sizeof v);
        return v;
      },
      n);
}

}  // namespace

void scatterAdd(absl::Span<float> dst, const SegmentData& s, float scale) {
  assert(dst.size() == s.numel);
  if (s.coded()) {
    addCoded(dst, s, scale);
  } else if (s.dense && s.borrowed != nullptr) {
    axpyBytesKernel(scale, s.borrowed, dst.data(), dst.size());
  } else if (s.dense) {
    assert(s.values.size() == dst.size());
    axpyKernel(scale, s.values.data(), dst.data(), s.values.size());
  } else {
    assert(s.indices.size() == s.values.size());
    scatterKernel(scale, s.indices.data(), s.values.data(), dst.data(), s.values.size());
  }
}

void axpy(float a, absl::Span<const float> x, absl::Span<float> y) {
  assert(x.size() == y.size());
  axpyKernel(a, x.data(), y.data(), x.size());
}

void copyDense(const SegmentData& s, absl::Span<float> dst) {
  assert(s.dense && dst.size() == s.numel);
  const void* src = s.borrowed != nullptr ? static_cast<const void*>(s.borrowed)
                                          : static_cast<const void*>(s.values.data());
  std::memcpy(dst.data(), src, dst.size() * sizeof(float));
}

double squaredNorm(const SegmentData& s, std::vector<float>* scratch) {
  if (s.coded()) {
    scratch->assign(s.numel, 0.0f);
    addCoded(absl::MakeSpan(*scratch), s, 1.0f);
    return squaresKernel(scratch->data(), scratch->size());
  }
  if (s.dense && s.borrowed != nullptr) return squaresBytesKernel(s.borrowed, s.numel);
  return squaresKernel(s.values.data(), s.values.size());
}

double sumSquaresLe(const uint8_t* bytes, size_t n) { return squaresBytesKernel(bytes, n); }

}  // namespace sparseps

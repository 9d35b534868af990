#pragma once
// Applying what travelled: the two updates every method's rules are built from.
//   scatterAdd: dst += scale * s   (s dense, sparse or coded: the delta it decodes to)
//   axpy:       y   += a * x
//   copyDense:  dst  = s       (s dense, its values owned or borrowed)
//   squaredNorm: |s|^2         (the delta s decodes to; a coded s is decoded into scratch)
//   sumSquaresLe: the sum of squares of n little-endian f32 values at any alignment
// Preconditions (checked by the wire decoder for received data): dst.size() == s.numel,
// sparse indices < numel, x.size() == y.size(). Vectorized for every x86-64 level by the
// compiler's function multi-versioning.

#include <vector>

#include "absl/types/span.h"
#include "compressors/segment_data.h"

namespace sparseps {

void scatterAdd(absl::Span<float> dst, const SegmentData& s, float scale);

void axpy(float a, absl::Span<const float> x, absl::Span<float> y);

void copyDense(const SegmentData& s, absl::Span<float> dst);

double squaredNorm(const SegmentData& s, std::vector<float>* scratch);

double sumSquaresLe(const uint8_t* bytes, size_t n);

}  // namespace sparseps

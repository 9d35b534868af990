#pragma once
// The coded segment forms (SegmentData.code) and the kernels every sender and receiver of
// them shares. A coded segment is a delta over all numel elements of a segment. Codes
// are fixed-width fields packed as compressors/kernels/bit_packing.h says.
//
//   code      w (bits)   params            element i
//   kSign     1          {v0, v1} per      field ? v1 : v0 of the element's bucket
//                        bucket
//   kTernary  2          {scale}           0: 0, 1: +scale, 2: -scale (3 is invalid)
//   kQsgd     1+b        norms, one per    (-1)^sign * norm[i / bucket] * level / s, with
//                        bucket            s = code_arg, b = bit width of s, level = the
//                                          low b bits (<= s), sign the top bit
// A code with per-bucket params cuts the segment into B buckets of ceil(numel / B)
// elements (the last may be shorter): element i is in bucket i / ceil(numel / B).
//   kNatural  9          {}                low 8 bits e: 0 -> 0, else (-1)^bit8 * 2^(e-127)
//                                          (e = 255 is invalid)
//   kF16      16         {}                the IEEE half (infinity and NaN are invalid)
//   kBf16     16         {}                the top 16 bits of an f32 (idem)
//   kLowRank  0          P then Q          sum_t P[r][t] * Q[c][t] at i = r*cols + c, with
//                                          rows = code_arg, cols = numel / rows, P rows x
//                                          rank and Q cols x rank, both row-major
//
// Receivers take params and codes from peers: validateCoded checks every one of them
// before anything is applied, including, under ValueBound, that no decoded value can
// reach 2^64 (the wire format's bound on every value).

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/segment_data.h"

namespace sparseps {

// Bits per element of code (0 for kLowRank); code_arg is kQsgd's levels.
uint32_t codeWidth(Code code, uint32_t code_arg);

// Bytes of the packed codes of numel elements.
inline size_t packedBytes(Code code, uint32_t code_arg, size_t numel) {
  return (size_t{codeWidth(code, code_arg)} * numel + 7) / 8;
}

const char* codeName(Code code);

// The bound on the magnitude of every value that travels, decoded ones included (the wire
// format's ValueCheck::kBounded): 2^64. In an f32's bits, the biased exponents from
// kBoundExponent up.
inline constexpr float kValueBound = 18446744073709551616.0f;
inline constexpr uint32_t kBoundExponent = 127 + 64;

// The most levels kQsgd takes (15 bits, so that a field fits 16 bits).
inline constexpr uint32_t kMaxQsgdLevels = (1u << 15) - 1;

// Checks everything a receiver relies on: code_arg, the number of params, the packed
// length, every field (invalid patterns, levels above s, nonzero padding), finite params,
// and with bound_values that every decoded value is below 2^64 in magnitude.
absl::Status validateCoded(const SegmentData& s, bool bound_values);

// dst += scale * decode(s), for a valid coded s with dst.size() == s.numel.
void addCoded(absl::Span<float> dst, const SegmentData& s, float scale);

// Makes *s the coded segment (code, code_arg) of numel elements, its packed codes sized
// (not cleared: the caller writes every byte), keeping its buffers' memory; params is
// left for the caller to fill.
void startCoded(SegmentData* s, uint32_t segment_id, size_t numel, Code code, uint32_t code_arg);

}  // namespace sparseps

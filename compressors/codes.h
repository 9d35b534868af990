#pragma once
// The coded segment forms (SegmentData.code) and the kernels every sender and receiver of
// them shares. A coded segment is a delta over all numel elements of a segment. Codes
// are fixed-width fields packed LSB first: field i occupies bits [w*i, w*i + w) of the
// byte string, bit b being bit (b % 8) of byte b / 8; padding bits are zero.
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

// Writes n fields of width w (1..16) from fields[] into packed at field position first,
// whole bytes, the last one's padding bits zero. first * w must be a multiple of 8.
void packFields(const uint16_t* fields, size_t n, uint32_t width, size_t first, uint8_t* packed);

// Reads n fields of width w starting at field position first (first * w a multiple of 8).
void unpackFields(const uint8_t* packed, size_t first, size_t n, uint32_t width, uint16_t* fields);

}  // namespace sparseps

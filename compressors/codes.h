#pragma once
// The coded segment forms (SegmentData.code) and what every sender and receiver of them
// shares. A coded segment is a delta over all numel elements of a segment: a few floats
// (params) and, for most codes, one fixed-width field per element, packed as
// compressors/kernels/bit_packing.h says.
//
// Each code is defined by its CodeFormat (below), in the file of the compressor that makes
// it, which also says what its fields and params mean: kSign in sign_sgd.cc, kTernary in
// terngrad.cc, kQsgd in qsgd.cc, kNatural in natural.cc, kF16 and kBf16 in cast.cc,
// kLowRank in powersgd.cc. This file holds what all codes share: the lookup of a format by
// code or by wire tag, the chunked decode loop, the checks of the packed length and its
// padding, and the per-bucket params rule (checkBuckets).
//
// Receivers take params and codes from peers: validateCoded checks every one of them
// before anything is applied, including, under ValueBound, that no decoded value can
// reach 2^64 (the wire format's bound on every value).

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/kernels/element_random.h"
#include "compressors/segment_data.h"

namespace sparseps {

// One code's definition. The compressor that makes the code names it in its CompressorInfo
// (compressors/registry.h), and adding that entry to the registry makes the code known.
// A code of one's own takes a Code value and a wire tag no other format has.
struct CodeFormat {
  Code code;
  const char* name;       // in messages: "qsgd"
  // Its encoding's tag on the wire (core/wire/wire_encoding.h), from kFirstCodeWireTag
  // up, and that encoding's name. A tag, once used, is never given to another code.
  uint8_t wire_tag;
  const char* wire_name;  // "qsgd", "sign_1"
  // Bits per element, at most kMaxCodeWidth (0: no packed fields; add then takes the whole
  // delta from params).
  uint32_t (*width)(uint32_t code_arg);
  // Checks code_arg alone, before anything is sized by the width; null: it must be 0.
  absl::Status (*check_arg)(uint32_t code_arg);
  // Checks the params (finite already, and below the bound with bound_values) against
  // numel and code_arg: their count and what the code needs of their values. Together
  // with first_invalid it must refuse, under bound_values, any segment that could decode
  // to a value of magnitude 2^64 or more.
  absl::Status (*check_params)(const SegmentData& s, bool bound_values);
  // The first of fields[0, n), fields of consecutive elements, that is invalid, or n;
  // null: every field is valid.
  size_t (*first_invalid)(const SegmentData& s, const uint16_t* fields, size_t n,
                          bool bound_values);
  // out[i] = the value of element first + i, whose field is fields[i].
  void (*decode)(const SegmentData& s, size_t first, const uint16_t* fields, size_t n,
                 float* out);
  // For a code without fields (width 0): dst += scale * the delta.
  void (*add)(absl::Span<float> dst, const SegmentData& s, float scale);
};

// The wire tags below this one are the float encodings'.
inline constexpr uint8_t kFirstCodeWireTag = 7;
// Fields are unpacked into 16 bits.
inline constexpr uint32_t kMaxCodeWidth = 16;

// Makes format known to codeFormat and codeOfWireTag (CompressorRegistry::add does, for
// its entry's code). Fails when its code or wire tag is another format's (the built-in
// formats are known from the start), or reserved, or a function it needs is missing.
// Like adding to the registry, not thread-safe; adding a known format again writes
// nothing.
absl::Status addCodeFormat(const CodeFormat& format);

// The format of a code other than kNone (aborts on a code no format defines, which only
// a compressor of one's own that was not registered can make).
const CodeFormat& codeFormat(Code code);
// The code whose wire_tag is tag; kNone if none.
Code codeOfWireTag(uint8_t tag);

// Bits per element of code (0 for kLowRank); code_arg is kQsgd's levels.
inline uint32_t codeWidth(Code code, uint32_t code_arg) {
  return codeFormat(code).width(code_arg);
}

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

// code_arg alone, as the code's check_arg does, and the width it gives: what a decoder
// checks before it sizes the packed codes by the width.
absl::Status checkCodeArg(Code code, uint32_t code_arg);

// Checks everything a receiver relies on: code_arg, the params, the packed length, every
// field (invalid patterns, levels above s, nonzero padding), finite params, and with
// bound_values that every decoded value is below 2^64 in magnitude.
absl::Status validateCoded(const SegmentData& s, bool bound_values);

// dst += scale * decode(s), for a valid coded s with dst.size() == s.numel.
void addCoded(absl::Span<float> dst, const SegmentData& s, float scale);

// Makes *s the coded segment (code, code_arg) of numel elements, its packed codes sized
// (not cleared: the caller writes every byte), keeping its buffers' memory; params is
// left for the caller to fill.
void startCoded(SegmentData* s, uint32_t segment_id, size_t numel, Code code, uint32_t code_arg);

// For the formats of codes with params per bucket (kSign: 2, kQsgd: 1): B buckets of
// ceil(numel / B) elements, the last possibly shorter, each holding at least one element.
absl::Status checkBuckets(const SegmentData& s, size_t params_per_bucket);

// f(b, i, run) for each run of elements [first + i, first + i + run) inside bucket b, over
// [first, first + n), for a segment checked by checkBuckets.
template <typename F>
void forEachBucketRun(const SegmentData& s, size_t params_per_bucket, size_t first, size_t n,
                      F f) {
  const size_t bucket = bucketLength(s.numel, s.params.size() / params_per_bucket);
  for (size_t i = 0; i < n;) {
    const size_t b = (first + i) / bucket;
    const size_t run = std::min(n - i, (b + 1) * bucket - (first + i));
    f(b, i, run);
    i += run;
  }
}

// For the formats of codes with a fixed number of params: s has exactly count.
absl::Status checkParamCount(const SegmentData& s, size_t count);

// For the formats whose fields carry an f32's biased exponent in bits [shift, shift + 8):
// the first field whose exponent is 255 (infinity, NaN), or with bound_values at least
// kBoundExponent; n if none.
size_t firstInvalidExponent(const uint16_t* fields, size_t n, uint32_t shift, bool bound_values);

}  // namespace sparseps

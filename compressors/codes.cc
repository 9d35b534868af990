#include "compressors/codes.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/numeric/bits.h"
#include "absl/strings/str_cat.h"
#include "compressors/kernels/apply.h"
#include "compressors/kernels/bit_packing.h"
#include "compressors/kernels/element_random.h"
#include "compressors/kernels/half.h"
#include "compressors/kernels/lowrank_product.h"
#include "compressors/kernels/simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sparseps {
namespace {

// Fields are decoded in chunks of this many elements (a multiple of 8, so that every
// chunk starts on a byte), each expanded to floats in cache and then added.
constexpr size_t kChunk = 4096;

uint32_t qsgdLevelBits(uint32_t levels) { return static_cast<uint32_t>(absl::bit_width(levels)); }

// Params of a code that has a fixed number of them (not kSign, kQsgd, kLowRank).
size_t expectedParams(const SegmentData& s) { return s.code == Code::kTernary ? 1 : 0; }

// The buckets of a code with per-bucket params (kSign: two each, kQsgd: one).
size_t bucketCount(const SegmentData& s) {
  return s.code == Code::kSign ? s.params.size() / 2 : s.params.size();
}

absl::Status invalidField(const SegmentData& s, size_t i, uint32_t field) {
  return absl::InvalidArgumentError(absl::StrCat(codeName(s.code), " segment ", s.segment_id,
                                                 ": invalid code ", field, " at element ", i));
}

// The per-code decoders of a run of fields, plain loops the compiler vectorizes.
SPARSEPS_MULTIVERSION void decodeSign(const uint16_t* f, size_t n, float v0, float v1, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = f[i] ? v1 : v0;
}

SPARSEPS_MULTIVERSION void decodeTernary(const uint16_t* f, size_t n, float scale, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = f[i] == 1 ? scale : (f[i] == 2 ? -scale : 0.0f);
}

SPARSEPS_MULTIVERSION void decodeLevels(const uint16_t* f, size_t n, uint32_t level_bits,
                                        float unit, float* out) {
  const uint32_t mask = (1u << level_bits) - 1;
  for (size_t i = 0; i < n; ++i) {
    const float v = unit * static_cast<float>(f[i] & mask);
    out[i] = (f[i] >> level_bits) ? -v : v;
  }
}

// Sign bit 8 and exponent e in the low byte are an f32's sign and exponent with a zero
// mantissa: 2^(e - 127), and e = 0 is zero.
SPARSEPS_MULTIVERSION void decodeNatural(const uint16_t* f, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t word = (uint32_t{f[i]} & 0xffu) << 23 | (uint32_t{f[i]} >> 8) << 31;
    std::memcpy(&out[i], &word, sizeof word);
  }
}

SPARSEPS_MULTIVERSION void decodeBf16(const uint16_t* f, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t word = uint32_t{f[i]} << 16;
    std::memcpy(&out[i], &word, sizeof word);
  }
}

void decodeHalfPortable(const uint16_t* f, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = halfToFloat(f[i]);
}

#if defined(__x86_64__)
// F16C's exact conversion, eight at a time (every AVX2 CPU has F16C).
__attribute__((target("avx2,f16c"))) void decodeHalfF16c(const uint16_t* f, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(f + i))));
  }
  decodeHalfPortable(f + i, n - i, out + i);
}
#endif

void decodeHalf(const uint16_t* f, size_t n, float* out) {
#if defined(__x86_64__)
  if (cpuSimdLevel() >= SimdLevel::kAvx2) return decodeHalfF16c(f, n, out);
#endif
  decodeHalfPortable(f, n, out);
}

// Decodes fields [first, first + n) of s into out.
void expand(const SegmentData& s, size_t first, size_t n, uint16_t* fields, float* out) {
  const uint32_t width = codeWidth(s.code, s.code_arg);
  unpackFields(s.packed.data(), first, n, width, fields);
  switch (s.code) {
    case Code::kSign:
    case Code::kQsgd: {
      // Runs of one bucket each, with its params.
      const size_t bucket = bucketLength(s.numel, bucketCount(s));
      for (size_t i = 0; i < n;) {
        const size_t b = (first + i) / bucket;
        const size_t run = std::min(n - i, (b + 1) * bucket - (first + i));
        if (s.code == Code::kSign) {
          decodeSign(fields + i, run, s.params[2 * b], s.params[2 * b + 1], out + i);
        } else {
          decodeLevels(fields + i, run, qsgdLevelBits(s.code_arg),
                       s.params[b] / static_cast<float>(s.code_arg), out + i);
        }
        i += run;
      }
      break;
    }
    case Code::kTernary: decodeTernary(fields, n, s.params[0], out); break;
    case Code::kNatural: decodeNatural(fields, n, out); break;
    case Code::kF16: decodeHalf(fields, n, out); break;
    case Code::kBf16: decodeBf16(fields, n, out); break;
    case Code::kNone:
    case Code::kLowRank:
      break;
  }
}

absl::Status checkFields(const SegmentData& s, bool bound_values) {
  const uint32_t width = codeWidth(s.code, s.code_arg);
  const size_t bits = size_t{width} * s.numel;
  if (bits % 8 != 0 && (s.packed.back() >> (bits % 8)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(codeName(s.code), " segment ", s.segment_id,
                                                   ": nonzero padding bits"));
  }
  uint16_t fields[kChunk];
  for (size_t first = 0; first < s.numel; first += kChunk) {
    const size_t n = std::min(kChunk, s.numel - first);
    unpackFields(s.packed.data(), first, n, width, fields);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t f = fields[i];
      bool bad = false;
      switch (s.code) {
        case Code::kTernary: bad = f == 3; break;
        case Code::kQsgd: bad = (f & ((1u << qsgdLevelBits(s.code_arg)) - 1)) > s.code_arg; break;
        case Code::kNatural:
          bad = (f & 0xff) == 0xff || (bound_values && (f & 0xff) >= kBoundExponent);
          break;
        case Code::kF16: bad = halfIsNonFinite(static_cast<uint16_t>(f)); break;
        case Code::kBf16: {
          const uint32_t e = (f >> 7) & 0xff;
          bad = e == 0xff || (bound_values && e >= kBoundExponent);
          break;
        }
        default: break;
      }
      if (bad) return invalidField(s, first + i, f);
    }
  }
  return absl::OkStatus();
}

absl::Status checkLowRank(const SegmentData& s, bool bound_values) {
  const uint32_t rows = s.code_arg;
  if (rows == 0 || s.numel % rows != 0) {
    return absl::InvalidArgumentError(absl::StrCat("low-rank segment ", s.segment_id, ": ", rows,
                                                   " rows do not divide numel ", s.numel));
  }
  const size_t cols = s.numel / rows;
  if (s.params.empty() || s.params.size() % (rows + cols) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "low-rank segment ", s.segment_id, ": ", s.params.size(),
        " factor values are not a whole rank of a ", rows, " x ", cols, " matrix"));
  }
  if (!s.packed.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("low-rank segment ", s.segment_id, " carries packed codes"));
  }
  if (bound_values) {
    // |sum_t P[r][t] Q[c][t]| <= rank * max|P| * max|Q|.
    const size_t rank = s.params.size() / (rows + cols);
    double max_p = 0, max_q = 0;
    for (size_t i = 0; i < rows * rank; ++i) max_p = std::max(max_p, std::fabs(double{s.params[i]}));
    for (size_t i = rows * rank; i < s.params.size(); ++i) {
      max_q = std::max(max_q, std::fabs(double{s.params[i]}));
    }
    if (static_cast<double>(rank) * max_p * max_q >= double{kValueBound}) {
      return absl::InvalidArgumentError(absl::StrCat(
          "low-rank segment ", s.segment_id,
          ": its factors can decode to a value beyond the bound 2^64 on any value"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

uint32_t codeWidth(Code code, uint32_t code_arg) {
  switch (code) {
    case Code::kSign: return 1;
    case Code::kTernary: return 2;
    case Code::kQsgd: return 1 + qsgdLevelBits(code_arg);
    case Code::kNatural: return 9;
    case Code::kF16:
    case Code::kBf16: return 16;
    case Code::kNone:
    case Code::kLowRank: return 0;
  }
  return 0;
}

const char* codeName(Code code) {
  switch (code) {
    case Code::kNone: return "none";
    case Code::kSign: return "sign";
    case Code::kTernary: return "ternary";
    case Code::kQsgd: return "qsgd";
    case Code::kNatural: return "natural";
    case Code::kF16: return "f16";
    case Code::kBf16: return "bf16";
    case Code::kLowRank: return "low-rank";
  }
  return "unknown";
}

absl::Status validateCoded(const SegmentData& s, bool bound_values) {
  const std::string what = absl::StrCat(codeName(s.code), " segment ", s.segment_id);
  if (s.dense || !s.indices.empty() || !s.values.empty() || s.index_seed) {
    return absl::InvalidArgumentError(absl::StrCat(what, " also carries dense or sparse values"));
  }
  for (size_t i = 0; i < s.params.size(); ++i) {
    const float p = s.params[i];
    if (!std::isfinite(p) || (bound_values && std::fabs(p) >= kValueBound)) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": parameter ", i, " is ", p, ", not finite or beyond the bound 2^64"));
    }
  }
  if (s.code == Code::kLowRank) return checkLowRank(s, bound_values);
  if (s.code == Code::kQsgd || s.code == Code::kSign) {
    if (s.code == Code::kQsgd && (s.code_arg == 0 || s.code_arg > kMaxQsgdLevels)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.code_arg,
                                                     " levels, must be in [1, ", kMaxQsgdLevels, "]"));
    }
    if (s.code == Code::kSign && s.code_arg != 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": unexpected argument ", s.code_arg));
    }
    const size_t per_bucket = s.code == Code::kSign ? 2 : 1;
    const size_t buckets = bucketCount(s);
    if (s.params.size() % per_bucket != 0 || buckets == 0 ||
        buckets > std::max<size_t>(s.numel, 1)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.params.size(),
                                                     " parameters for ", s.numel, " elements"));
    }
    // Every bucket must hold an element: B buckets of ceil(numel / B) cover numel exactly
    // when the last one starts inside the segment.
    if (s.numel > 0 && (buckets - 1) * bucketLength(s.numel, buckets) >= s.numel) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", buckets, " buckets for ",
                                                     s.numel, " elements leave one empty"));
    }
    if (s.code == Code::kQsgd) {
      for (float norm : s.params) {
        if (norm < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": negative norm ", norm));
      }
    }
  } else {
    if (s.code_arg != 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": unexpected argument ", s.code_arg));
    }
    if (s.params.size() != expectedParams(s)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.params.size(),
                                                     " parameters, expected ", expectedParams(s)));
    }
  }
  if (s.packed.size() != packedBytes(s.code, s.code_arg, s.numel)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.packed.size(),
                                                   " bytes of codes, expected ",
                                                   packedBytes(s.code, s.code_arg, s.numel)));
  }
  return checkFields(s, bound_values);
}

void addCoded(absl::Span<float> dst, const SegmentData& s, float scale) {
  if (s.code == Code::kLowRank) {
    const size_t rows = s.code_arg, cols = s.numel / rows;
    const size_t rank = s.params.size() / (rows + cols);
    addLowRankProduct(s.params.data(), s.params.data() + rows * rank, rows, cols, rank, scale,
                      dst.data());
    return;
  }
  uint16_t fields[kChunk];
  float values[kChunk];
  for (size_t first = 0; first < s.numel; first += kChunk) {
    const size_t n = std::min(kChunk, s.numel - first);
    expand(s, first, n, fields, values);
    axpy(scale, absl::MakeConstSpan(values, n), dst.subspan(first, n));
  }
}

void startCoded(SegmentData* s, uint32_t segment_id, size_t numel, Code code, uint32_t code_arg) {
  s->segment_id = segment_id;
  s->numel = static_cast<uint32_t>(numel);
  s->dense = false;
  s->indices.clear();
  s->values.clear();
  s->index_seed.reset();
  s->code = code;
  s->code_arg = code_arg;
  s->params.clear();
  // No zero-fill: the packers write every byte (a reused buffer of the same size costs
  // nothing here).
  s->packed.resize(packedBytes(code, code_arg, numel));
}

}  // namespace sparseps

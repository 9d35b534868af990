#include "compressors/cast.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compressors/codes.h"
#include "compressors/kernels/half.h"
#include "compressors/kernels/simd.h"
#include "compressors/registry.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sparseps {
namespace {

// Largest finite bfloat16 (0x7f7f), as f32 bits.
constexpr uint32_t kBf16MaxBits = 0x7f7f0000u;

// v as two little-endian bytes. On a little-endian host one 16-bit store (memcpy): the
// compiler narrows whole vectors with it, where two byte stores cost it shuffles.
inline void storeLe16(uint8_t* out, uint16_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(out, &v, sizeof v);
#else
  out[0] = static_cast<uint8_t>(v);
  out[1] = static_cast<uint8_t>(v >> 8);
#endif
}

// Finite values round to nearest even and saturate at the largest finite value. An
// infinity or a NaN (a diverged gradient) stays non-finite, so the decoder refuses the push
// instead of the server applying a made-up largest value; a NaN stays quiet, sign kept (the
// rounding would carry its high mantissa bits into the exponent or the sign and send 0).
// 512-bit vectors: this loop timed faster with them here than as the 256-bit clone GCC
// picks by itself.
SPARSEPS_MULTIVERSION_WIDE(void toBf16(const float* x, size_t n, uint8_t* out), {
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], sizeof bits);
    // In integers: magnitudes compare as their bit patterns (magnitude_key.h).
    const uint32_t magnitude = bits & 0x7fffffffu;
    const uint32_t word = (bits & 0x80000000u) | std::min(magnitude, kBf16MaxBits);
    const uint32_t rounded = (word + 0x7fffu + ((word >> 16) & 1u)) >> 16;  // ties to even
    const uint32_t non_finite = (bits >> 16) | (magnitude > 0x7f800000u ? 0x40u : 0u);
    storeLe16(out + 2 * i,
              static_cast<uint16_t>(magnitude >= 0x7f800000u ? non_finite : rounded));
  }
})

// The same rule in half precision (floatToHalf keeps infinities and NaNs).
void toHalfPortable(const float* x, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    const float v = std::isfinite(x[i]) ? std::clamp(x[i], -kHalfMax, kHalfMax) : x[i];
    storeLe16(out + 2 * i, floatToHalf(v));
  }
}

#if defined(__x86_64__)
// F16C's conversion, eight at a time; every AVX2 CPU has F16C. Little-endian host.
__attribute__((target("avx2,f16c"))) void toHalfF16c(const float* x, size_t n, uint8_t* out) {
  const __m256 hi = _mm256_set1_ps(kHalfMax), lo = _mm256_set1_ps(-kHalfMax);
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 magnitude_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xi = _mm256_loadu_ps(x + i);
    // min and max return their second operand when either is NaN: x goes second, so a
    // NaN stays NaN rather than becoming -kHalfMax. Infinities are put back after.
    const __m256 saturated = _mm256_min_ps(hi, _mm256_max_ps(lo, xi));
    const __m256 infinite = _mm256_cmp_ps(_mm256_and_ps(xi, magnitude_mask), inf, _CMP_EQ_OQ);
    const __m256 v = _mm256_blendv_ps(saturated, xi, infinite);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  toHalfPortable(x + i, n - i, out + 2 * i);
}
#endif

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
// F16C's exact conversion, eight at a time.
__attribute__((target("avx2,f16c"))) void decodeHalfF16c(const uint16_t* f, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(f + i))));
  }
  decodeHalfPortable(f + i, n - i, out + i);
}
#endif

void decodeHalf(const SegmentData&, size_t, const uint16_t* f, size_t n, float* out) {
#if defined(__x86_64__)
  if (cpuSimdLevel() >= SimdLevel::kAvx2) return decodeHalfF16c(f, n, out);
#endif
  decodeHalfPortable(f, n, out);
}

size_t firstNonFiniteHalf(const SegmentData&, const uint16_t* f, size_t n, bool) {
  for (size_t i = 0; i < n; ++i) {
    if (halfIsNonFinite(f[i])) return i;
  }
  return n;
}

// kF16: 16 bits per element, no params: the element as an IEEE half; infinity and NaN
// are invalid.
constexpr CodeFormat kF16Format = {
    Code::kF16, "f16", /*wire_tag=*/11, "dense_f16",
    /*width=*/[](uint32_t) -> uint32_t { return 16; },
    /*check_arg=*/nullptr,
    /*check_params=*/[](const SegmentData& s, bool) { return checkParamCount(s, 0); },
    /*first_invalid=*/firstNonFiniteHalf,
    /*decode=*/decodeHalf,
    /*add=*/nullptr};

// kBf16: 16 bits per element, no params: the top 16 bits of the element's f32; infinity
// and NaN are invalid.
constexpr CodeFormat kBf16Format = {
    Code::kBf16, "bf16", /*wire_tag=*/12, "dense_bf16",
    /*width=*/[](uint32_t) -> uint32_t { return 16; },
    /*check_arg=*/nullptr,
    /*check_params=*/[](const SegmentData& s, bool) { return checkParamCount(s, 0); },
    /*first_invalid=*/
    [](const SegmentData&, const uint16_t* f, size_t n, bool bound_values) {
      return firstInvalidExponent(f, n, 7, bound_values);
    },
    /*decode=*/
    [](const SegmentData&, size_t, const uint16_t* f, size_t n, float* out) {
      decodeBf16(f, n, out);
    },
    /*add=*/nullptr};

}  // namespace

void CastCompressor::compress(absl::Span<const float> x, double /*density*/,
                              const SelectContext& ctx, SegmentData* out) const {
  startCoded(out, ctx.segment_id, x.size(), code_, 0);
  uint8_t* bytes = out->packed.data();
  if (code_ == Code::kBf16) {
    toBf16(x.data(), x.size(), bytes);
    return;
  }
#if defined(__x86_64__)
  if (cpuSimdLevel() >= SimdLevel::kAvx2) {
    toHalfF16c(x.data(), x.size(), bytes);
    return;
  }
#endif
  toHalfPortable(x.data(), x.size(), bytes);
}

namespace builtin_compressors {

std::vector<CompressorInfo> cast() {
  return {{"fp16",
           "every element as an IEEE half (2 bytes), rounded to nearest even, finite values "
           "saturating",
           "Micikevicius et al., Mixed Precision Training, ICLR 2018",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<CastCompressor>(Code::kF16);
           },
           &kF16Format},
          {"bf16",
           "every element as a bfloat16 (2 bytes), rounded to nearest even, finite values "
           "saturating",
           "Kalamkar et al., A Study of BFLOAT16 for Deep Learning Training, arXiv 2019",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<CastCompressor>(Code::kBf16);
           },
           &kBf16Format}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

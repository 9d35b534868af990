#include "compressors/cast.h"

#include <algorithm>
#include <cstring>

#include "compressors/codes.h"
#include "compressors/half.h"
#include "compressors/simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sparseps {
namespace {

// Largest finite bfloat16 (0x7f7f).
constexpr float kBf16Max = 3.38953139e38f;

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

// Rounded to nearest even, saturating. A NaN stays a (quiet) NaN, sign kept: the
// rounding below would carry a NaN's high mantissa bits into the exponent or the sign and
// send it as 0 or infinity. The decoder refuses the NaN.
// 512-bit vectors: with the NaN select, the 256-bit clone GCC picks by itself takes 1.4x
// as long.
SPARSEPS_MULTIVERSION_WIDE(void toBf16(const float* x, size_t n, uint8_t* out), {
  for (size_t i = 0; i < n; ++i) {
    const float v = std::clamp(x[i], -kBf16Max, kBf16Max);
    uint32_t word;
    std::memcpy(&word, &v, sizeof word);
    const bool nan = (word & 0x7fffffffu) > 0x7f800000u;
    const uint32_t rounded = (word + 0x7fffu + ((word >> 16) & 1u)) >> 16;  // ties to even
    storeLe16(out + 2 * i, static_cast<uint16_t>(nan ? (word >> 16) | 0x40u : rounded));
  }
})

void toHalfPortable(const float* x, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    storeLe16(out + 2 * i, floatToHalf(std::clamp(x[i], -kHalfMax, kHalfMax)));
  }
}

#if defined(__x86_64__)
// F16C's conversion, eight at a time; every AVX2 CPU has F16C. Little-endian host.
__attribute__((target("avx2,f16c"))) void toHalfF16c(const float* x, size_t n, uint8_t* out) {
  const __m256 hi = _mm256_set1_ps(kHalfMax), lo = _mm256_set1_ps(-kHalfMax);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // min and max return their second operand when either is NaN: x goes second, so a
    // NaN stays NaN (and is refused by the decoder) rather than becoming -kHalfMax.
    const __m256 v = _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_loadu_ps(x + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  toHalfPortable(x + i, n - i, out + 2 * i);
}
#endif

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

CompressorInfo fp16Info() {
  return {"fp16", "every element as an IEEE half (2 bytes), rounded to nearest even, saturating",
          "Micikevicius et al., Mixed Precision Training, ICLR 2018",
          {},
          [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
            return std::make_unique<CastCompressor>(Code::kF16);
          }};
}

CompressorInfo bf16Info() {
  return {"bf16", "every element as a bfloat16 (2 bytes), rounded to nearest even, saturating",
          "Kalamkar et al., A Study of BFLOAT16 for Deep Learning Training, arXiv 2019",
          {},
          [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
            return std::make_unique<CastCompressor>(Code::kBf16);
          }};
}

}  // namespace sparseps

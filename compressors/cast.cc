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

SPARSEPS_MULTIVERSION void toBf16(const float* x, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    const float v = std::clamp(x[i], -kBf16Max, kBf16Max);
    uint32_t word;
    std::memcpy(&word, &v, sizeof word);
    const uint32_t rounded = (word + 0x7fffu + ((word >> 16) & 1u)) >> 16;  // ties to even
    out[2 * i] = static_cast<uint8_t>(rounded);
    out[2 * i + 1] = static_cast<uint8_t>(rounded >> 8);
  }
}

void toHalfPortable(const float* x, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = floatToHalf(std::clamp(x[i], -kHalfMax, kHalfMax));
    out[2 * i] = static_cast<uint8_t>(h);
    out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
}

#if defined(__x86_64__)
// F16C's conversion, eight at a time; every AVX2 CPU has F16C. Little-endian host.
__attribute__((target("avx2,f16c"))) void toHalfF16c(const float* x, size_t n, uint8_t* out) {
  const __m256 hi = _mm256_set1_ps(kHalfMax), lo = _mm256_set1_ps(-kHalfMax);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(x + i), lo), hi);
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

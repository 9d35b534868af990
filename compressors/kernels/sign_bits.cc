#include "compressors/kernels/sign_bits.h"

#include <cstring>

#include "compressors/kernels/simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sparseps {
namespace {

SPARSEPS_MULTIVERSION void packBytes(const float* x, size_t bytes, uint8_t* packed) {
  for (size_t j = 0; j < bytes; ++j) {
    uint32_t byte = 0;
    for (uint32_t b = 0; b < 8; ++b) byte |= static_cast<uint32_t>(x[8 * j + b] < 0) << b;
    packed[j] = static_cast<uint8_t>(byte);
  }
}

#if defined(__x86_64__)
// The same bits from a compare into a mask register, 16 elements (two bytes) at a time:
// _CMP_LT_OQ is C++'s x < 0 (false for NaN and -0). GCC vectorizes packBytes with
// shuffles, several times slower. Little-endian host.
__attribute__((target("avx512f"))) void packBytesAvx512(const float* x, size_t bytes,
                                                        uint8_t* packed) {
  const __m512 zero = _mm512_setzero_ps();
  size_t j = 0;
  for (; j + 2 <= bytes; j += 2) {
    const uint16_t bits = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 8 * j), zero, _CMP_LT_OQ);
    std::memcpy(packed + j, &bits, sizeof bits);
  }
  packBytes(x + 8 * j, bytes - j, packed + j);
}

// Eight elements (one byte) at a time: the compare's lanes, their sign bits gathered.
__attribute__((target("avx2"))) void packBytesAvx2(const float* x, size_t bytes,
                                                   uint8_t* packed) {
  const __m256 zero = _mm256_setzero_ps();
  for (size_t j = 0; j < bytes; ++j) {
    packed[j] = static_cast<uint8_t>(
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 8 * j), zero, _CMP_LT_OQ)));
  }
}
#endif

}  // namespace

void packSignBits(absl::Span<const float> x, uint8_t* packed) {
  const size_t whole = x.size() / 8;
#if defined(__x86_64__)
  switch (cpuSimdLevel()) {
    case SimdLevel::kAvx512: packBytesAvx512(x.data(), whole, packed); break;
    case SimdLevel::kAvx2: packBytesAvx2(x.data(), whole, packed); break;
    default: packBytes(x.data(), whole, packed); break;
  }
#else
  packBytes(x.data(), whole, packed);
#endif
  if (x.size() % 8 != 0) {
    uint32_t byte = 0;
    for (size_t i = 8 * whole; i < x.size(); ++i) byte |= static_cast<uint32_t>(x[i] < 0) << (i % 8);
    packed[whole] = static_cast<uint8_t>(byte);
  }
}

}  // namespace sparseps

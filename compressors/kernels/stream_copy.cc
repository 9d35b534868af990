#include "compressors/kernels/stream_copy.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sparseps {
namespace {

#if defined(__x86_64__)

// Stores until dst is aligned to kAlign with memcpy; returns the bytes done.
template <size_t kAlign>
size_t alignHead(uint8_t* dst, const uint8_t* src, size_t bytes) {
  size_t head = (kAlign - (reinterpret_cast<uintptr_t>(dst) & (kAlign - 1))) & (kAlign - 1);
  if (head > bytes) head = bytes;
  std::memcpy(dst, src, head);
  return head;
}

__attribute__((target("avx512f"))) void copyAvx512(uint8_t* dst, const uint8_t* src,
                                                   size_t bytes) {
  size_t i = alignHead<64>(dst, src, bytes);
  for (; i + 256 <= bytes; i += 256) {
    const __m512i a = _mm512_loadu_si512(src + i);
    const __m512i b = _mm512_loadu_si512(src + i + 64);
    const __m512i c = _mm512_loadu_si512(src + i + 128);
    const __m512i d = _mm512_loadu_si512(src + i + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 64), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 128), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 192), d);
  }
  std::memcpy(dst + i, src + i, bytes - i);
  _mm_sfence();
}

__attribute__((target("avx2"))) void copyAvx2(uint8_t* dst, const uint8_t* src, size_t bytes) {
  size_t i = alignHead<32>(dst, src, bytes);
  for (; i + 128 <= bytes; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
  }
  std::memcpy(dst + i, src + i, bytes - i);
  _mm_sfence();
}

#endif

}  // namespace

void streamCopy(uint8_t* dst, const uint8_t* src, size_t bytes, SimdLevel level) {
#if defined(__x86_64__)
  switch (usableSimdLevel(level)) {
    case SimdLevel::kAvx512: return copyAvx512(dst, src, bytes);
    case SimdLevel::kAvx2: return copyAvx2(dst, src, bytes);
    case SimdLevel::kScalar: break;
  }
#endif
  (void)level;
  std::memcpy(dst, src, bytes);
}

}  // namespace sparseps

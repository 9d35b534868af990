#pragma once
// LEB128 varints of u32 for the delta-varint index encoding: 7 bits per byte, low
// group first, high bit set on every byte but the last. At most 5 bytes; the decoder
// rejects a longer run or a fifth byte carrying bits above 2^32 ("varint overflow").

#include <cstddef>
#include <cstdint>

namespace sparseps::wire {

inline constexpr size_t kMaxVarintBytes = 5;

inline size_t varintBytes(uint32_t value) {
  size_t n = 1;
  while (value >= 0x80u) {
    value >>= 7;
    ++n;
  }
  return n;
}

// Writes value at out and returns the number of bytes written (1..5).
inline size_t putVarint(uint8_t* out, uint32_t value) {
  size_t n = 0;
  while (value >= 0x80u) {
    out[n++] = static_cast<uint8_t>(value | 0x80u);
    value >>= 7;
  }
  out[n++] = static_cast<uint8_t>(value);
  return n;
}

enum class VarintResult { kOk, kTruncated, kOverflow };

// Reads one varint from [*in, end); on success advances *in past it.
inline VarintResult getVarint(const uint8_t** in, const uint8_t* end, uint32_t* value) {
  const uint8_t* p = *in;
  uint32_t result = 0;
  for (size_t i = 0;; ++i) {
    if (p == end) return VarintResult::kTruncated;
    const uint8_t byte = *p++;
    // The fifth byte holds bits 28..31: anything above, or a continuation, overflows u32.
    if (i == kMaxVarintBytes - 1 && byte > 0x0fu) return VarintResult::kOverflow;
    result |= static_cast<uint32_t>(byte & 0x7fu) << (7 * i);
    if ((byte & 0x80u) == 0) {
      *value = result;
      *in = p;
      return VarintResult::kOk;
    }
  }
}

}  // namespace sparseps::wire

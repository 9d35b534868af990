#include "compressors/kernels/half.h"

#include <cmath>
#include <cstring>

namespace sparseps {

namespace {

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Float bit patterns (magnitude only) of the conversion's boundaries.
constexpr uint32_t kF32Inf = 0x7f800000u;        // infinity
constexpr uint32_t kF32HalfOverflow = 0x477ff000u;  // 65520: rounds (ties to even) to infinity
constexpr uint32_t kF32HalfMinNormal = 0x38800000u;  // 2^-14
constexpr uint32_t kF32HalfUnderflow = 0x33000000u;  // 2^-25: half of the smallest subnormal

}  // namespace

uint16_t floatToHalf(float value) {
  const uint32_t bits = floatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= kF32Inf) {
    // Infinity, or NaN with its top mantissa bits and the quiet bit set.
    const uint32_t nan = magnitude > kF32Inf ? (0x200u | ((magnitude >> 13) & 0x3ffu)) : 0u;
    return static_cast<uint16_t>(sign | 0x7c00u | nan);
  }
  if (magnitude >= kF32HalfOverflow) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude < kF32HalfMinNormal) {
    if (magnitude < kF32HalfUnderflow) return sign;
    // Subnormal half: count of 2^-24 units = mantissa (with its implicit bit) >> shift.
    const uint32_t exponent = magnitude >> 23;  // 102..112 here
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;     // 14..24
    // Round to nearest even without a branch: add just under half a unit plus the kept
    // lowest bit, then truncate.
    const uint32_t half = (mantissa + ((1u << (shift - 1u)) - 1u) + ((mantissa >> shift) & 1u)) >> shift;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal half: rebias the exponent (127 -> 15) and round away the low 13 mantissa bits,
  // to nearest even as above. A carry out of the mantissa correctly bumps the exponent.
  const uint32_t half = (magnitude - 0x38000000u + 0x0fffu + ((magnitude >> 13) & 1u)) >> 13;
  return static_cast<uint16_t>(sign | half);
}

float halfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1fu) return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

bool fitsHalf(float value) { return !(std::fabs(value) >= 65520.0f) || std::isinf(value); }

}  // namespace sparseps

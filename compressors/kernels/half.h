#pragma once
// IEEE 754 binary16 ("half") conversion: the wire format's f16 values, and the rounding
// a sender applies to the values it will send in half precision. float -> half rounds
// to nearest, ties to even; values of magnitude >= 65520 become infinity, NaN stays NaN
// (quiet bit kept). half -> float is exact. Portable bit manipulation: no _Float16 or
// F16C needed, so every compiler and host produces the same bytes.

#include <cstdint>

namespace sparseps {

// Largest finite half.
inline constexpr float kHalfMax = 65504.0f;

uint16_t floatToHalf(float value);
float halfToFloat(uint16_t half);

// True when value's half is finite exactly when value is: false only for finite values
// of magnitude >= 65520, the boundary where rounding reaches infinity.
bool fitsHalf(float value);

// value rounded to the nearest half (exactly what an f16 value on the wire decodes to);
// for a value that does not fit (fitsHalf false), the value itself.
inline float roundToHalf(float value) {
  return fitsHalf(value) ? halfToFloat(floatToHalf(value)) : value;
}

// True when a half bit pattern is infinity or NaN.
inline bool halfIsNonFinite(uint16_t half) { return (half & 0x7c00u) == 0x7c00u; }

}  // namespace sparseps

#pragma once
// The order every selection kernel uses: a float's magnitude as the u32 bit pattern with
// the sign bit cleared. For non-negative IEEE floats the bit patterns sort like the
// values, so comparing keys compares |x|, and the order is total: -0 and +0 are equal,
// +-Inf is above every finite value, and NaN (any payload) is above +-Inf. Ties among
// equal keys are broken by index: the lower index wins.

#include <cstdint>
#include <cstring>

namespace sparseps {

inline uint32_t magnitudeKey(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits & 0x7fffffffu;
}

// The non-negative float whose magnitude key is `key`.
inline float keyToFloat(uint32_t key) {
  float v;
  std::memcpy(&v, &key, sizeof v);
  return v;
}

}  // namespace sparseps

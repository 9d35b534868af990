#pragma once
// Little-endian byte access for the wire format. The format is little-endian on every
// host; these helpers copy through memcpy (no unaligned loads, no aliasing tricks) and
// swap bytes only on a big-endian host, so the common case compiles to plain moves.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace sparseps::wire {

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
inline constexpr bool kHostLittleEndian = false;
#else
inline constexpr bool kHostLittleEndian = true;
#endif

template <typename T>
inline T byteSwapped(T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  for (size_t i = 0; i < sizeof(T) / 2; ++i) {
    uint8_t t = bytes[i];
    bytes[i] = bytes[sizeof(T) - 1 - i];
    bytes[sizeof(T) - 1 - i] = t;
  }
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

// Writes value at out (sizeof(T) bytes, little-endian).
template <typename T>
inline void storeLe(uint8_t* out, T value) {
  if constexpr (!kHostLittleEndian) value = byteSwapped(value);
  std::memcpy(out, &value, sizeof(T));
}

// Reads a little-endian T from in (sizeof(T) bytes).
template <typename T>
inline T loadLe(const uint8_t* in) {
  T value;
  std::memcpy(&value, in, sizeof(T));
  if constexpr (!kHostLittleEndian) value = byteSwapped(value);
  return value;
}

// Writes count values as little-endian at out.
template <typename T>
inline void storeArrayLe(uint8_t* out, const T* values, size_t count) {
  if constexpr (kHostLittleEndian) {
    if (count != 0) std::memcpy(out, values, count * sizeof(T));
  } else {
    for (size_t i = 0; i < count; ++i) storeLe(out + i * sizeof(T), values[i]);
  }
}

// Reads count little-endian values from in.
template <typename T>
inline void loadArrayLe(const uint8_t* in, T* values, size_t count) {
  if constexpr (kHostLittleEndian) {
    if (count != 0) std::memcpy(values, in, count * sizeof(T));
  } else {
    for (size_t i = 0; i < count; ++i) values[i] = loadLe<T>(in + i * sizeof(T));
  }
}

}  // namespace sparseps::wire

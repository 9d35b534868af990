#include "compressors/kernels/bit_packing.h"

#include "compressors/kernels/simd.h"

namespace sparseps {
namespace {

// Packs whole groups of fields that fill whole bytes with plain shifts the compiler
// vectorizes (widths 1: 8 fields per byte; 2: 4 per byte; 6: 4 per 3 bytes; 9: 8 per 9
// bytes; 16: one per 2 bytes); returns the fields packed. packFields does the rest.
SPARSEPS_MULTIVERSION size_t packGroups(const uint16_t* f, size_t n, uint32_t width, uint8_t* out) {
  switch (width) {
    case 1: {
      const size_t groups = n / 8;
      for (size_t j = 0; j < groups; ++j) {
        uint32_t byte = 0;
        for (uint32_t k = 0; k < 8; ++k) byte |= uint32_t{f[8 * j + k]} << k;
        out[j] = static_cast<uint8_t>(byte);
      }
      return 8 * groups;
    }
    case 2: {
      const size_t groups = n / 4;
      for (size_t j = 0; j < groups; ++j) {
        out[j] = static_cast<uint8_t>(f[4 * j] | (f[4 * j + 1] << 2) | (f[4 * j + 2] << 4) |
                                      (f[4 * j + 3] << 6));
      }
      return 4 * groups;
    }
    case 6: {
      const size_t groups = n / 4;
      for (size_t j = 0; j < groups; ++j) {
        const uint32_t v = uint32_t{f[4 * j]} | (uint32_t{f[4 * j + 1]} << 6) |
                           (uint32_t{f[4 * j + 2]} << 12) | (uint32_t{f[4 * j + 3]} << 18);
        out[3 * j] = static_cast<uint8_t>(v);
        out[3 * j + 1] = static_cast<uint8_t>(v >> 8);
        out[3 * j + 2] = static_cast<uint8_t>(v >> 16);
      }
      return 4 * groups;
    }
    case 9: {
      const size_t groups = n / 8;
      for (size_t j = 0; j < groups; ++j) {
        const uint16_t* g = f + 8 * j;
        uint64_t lo = 0;
        for (uint32_t k = 0; k < 8; ++k) lo |= uint64_t{g[k]} << (9 * k);  // g[7]'s top bit falls off
        for (uint32_t b = 0; b < 8; ++b) out[9 * j + b] = static_cast<uint8_t>(lo >> (8 * b));
        out[9 * j + 8] = static_cast<uint8_t>(g[7] >> 1);
      }
      return 8 * groups;
    }
    case 16:
      for (size_t i = 0; i < n; ++i) {
        out[2 * i] = static_cast<uint8_t>(f[i]);
        out[2 * i + 1] = static_cast<uint8_t>(f[i] >> 8);
      }
      return n;
    default:
      return 0;
  }
}

}  // namespace

void packFields(const uint16_t* fields, size_t n, uint32_t width, size_t first, uint8_t* packed) {
  uint8_t* out = packed + first * width / 8;
  const size_t grouped = packGroups(fields, n, width, out);
  out += grouped * width / 8;  // groups end on a byte
  fields += grouped;
  n -= grouped;
  // Other widths, and the fields after the last whole group.
  uint64_t acc = 0;  // bits not yet written, LSB first
  uint32_t held = 0;
  for (size_t i = 0; i < n; ++i) {
    acc |= uint64_t{fields[i]} << held;
    held += width;
    while (held >= 8) {
      *out++ = static_cast<uint8_t>(acc);
      acc >>= 8;
      held -= 8;
    }
  }
  if (held > 0) *out = static_cast<uint8_t>(acc);  // the last byte, padding bits zero
}

namespace {

// Unpacks whole groups of fields that fill whole bytes (the widths of packGroups); returns
// the fields unpacked. unpackFields does the rest.
SPARSEPS_MULTIVERSION size_t unpackGroups(const uint8_t* in, size_t n, uint32_t width, uint16_t* f) {
  switch (width) {
    case 1: {
      const size_t groups = n / 8;
      for (size_t j = 0; j < groups; ++j) {
        for (uint32_t k = 0; k < 8; ++k) f[8 * j + k] = (in[j] >> k) & 1;
      }
      return 8 * groups;
    }
    case 2: {
      const size_t groups = n / 4;
      for (size_t j = 0; j < groups; ++j) {
        for (uint32_t k = 0; k < 4; ++k) f[4 * j + k] = (in[j] >> (2 * k)) & 3;
      }
      return 4 * groups;
    }
    case 6: {
      const size_t groups = n / 4;
      for (size_t j = 0; j < groups; ++j) {
        const uint32_t v = uint32_t{in[3 * j]} | uint32_t{in[3 * j + 1]} << 8 |
                           uint32_t{in[3 * j + 2]} << 16;
        for (uint32_t k = 0; k < 4; ++k) f[4 * j + k] = static_cast<uint16_t>((v >> (6 * k)) & 63);
      }
      return 4 * groups;
    }
    case 9: {
      const size_t groups = n / 8;
      for (size_t j = 0; j < groups; ++j) {
        uint64_t lo = 0;
        for (uint32_t b = 0; b < 8; ++b) lo |= uint64_t{in[9 * j + b]} << (8 * b);
        for (uint32_t k = 0; k < 7; ++k) f[8 * j + k] = static_cast<uint16_t>((lo >> (9 * k)) & 511);
        f[8 * j + 7] = static_cast<uint16_t>((lo >> 63) | uint32_t{in[9 * j + 8]} << 1);
      }
      return 8 * groups;
    }
    case 16:
      for (size_t i = 0; i < n; ++i) {
        f[i] = static_cast<uint16_t>(in[2 * i] | (uint32_t{in[2 * i + 1]} << 8));
      }
      return n;
    default:
      return 0;
  }
}

}  // namespace

void unpackFields(const uint8_t* packed, size_t first, size_t n, uint32_t width, uint16_t* fields) {
  const uint8_t* in = packed + first * width / 8;
  const size_t grouped = unpackGroups(in, n, width, fields);
  in += grouped * width / 8;
  fields += grouped;
  n -= grouped;
  // Other widths, and the fields after the last whole group.
  const uint32_t mask = (1u << width) - 1;
  uint64_t acc = 0;
  uint32_t held = 0;
  for (size_t i = 0; i < n; ++i) {
    while (held < width) {
      acc |= uint64_t{*in++} << held;
      held += 8;
    }
    fields[i] = static_cast<uint16_t>(acc & mask);
    acc >>= width;
    held -= width;
  }
}

}  // namespace sparseps

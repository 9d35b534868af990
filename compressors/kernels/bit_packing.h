#pragma once
// Fixed-width fields packed LSB first: field i of width w occupies bits [w*i, w*i + w) of
// the byte string, bit b being bit (b % 8) of byte b / 8; padding bits are zero. The coded
// segments (codes.h) carry their codes so. Widths 1, 2, 6, 9 and 16 pack and unpack whole
// byte groups with shifts the compiler vectorizes; the others, and the tail, bit by bit.

#include <cstddef>
#include <cstdint>

namespace sparseps {

// Writes n fields of width w (1..16) from fields[] into packed at field position first,
// whole bytes, the last one's padding bits zero. first * w must be a multiple of 8.
void packFields(const uint16_t* fields, size_t n, uint32_t width, size_t first, uint8_t* packed);

// Reads n fields of width w starting at field position first (first * w a multiple of 8).
void unpackFields(const uint8_t* packed, size_t first, size_t n, uint32_t width, uint16_t* fields);

}  // namespace sparseps

#pragma once
// The sign bits of a vector, packed as kSign fields (sign_sgd.h): bit i is 1 where x_i < 0
// (so sign(0) = +1). Shared by the sign-bit compressors (signsgd, onebit).

#include <cstdint>

#include "absl/types/span.h"

namespace sparseps {

// Writes ceil(x.size() / 8) bytes at packed; padding bits zero.
void packSignBits(absl::Span<const float> x, uint8_t* packed);

}  // namespace sparseps

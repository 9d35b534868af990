#pragma once
// streamCopy: memcpy with non-temporal (streaming) stores. A plain store first reads the
// destination's cache line; a streaming store skips the cache, so copying a buffer much
// larger than the cache moves each byte once in and once out instead of twice in. The
// wire format copies large dense bodies with it, a chunk at a time, hashing each chunk
// of the source while that is still in cache (core/wire/wire_encoding.cc).
// Only for large copies: the destination ends up out of cache, which a small buffer that
// is read next would pay for. The stores are fenced before it returns.

#include <cstddef>
#include <cstdint>

#include "compressors/kernels/simd.h"

namespace sparseps {

// Bodies at least this large are worth streaming (well above a core's L2).
inline constexpr size_t kStreamCopyMinBytes = size_t{4} << 20;

void streamCopy(uint8_t* dst, const uint8_t* src, size_t bytes,
                SimdLevel level = cpuSimdLevel());

}  // namespace sparseps

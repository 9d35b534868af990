#pragma once
// Reader for the IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/):
// a big-endian magic 0x0000 08 <ndim>, then ndim big-endian u32 sizes, then the unsigned
// bytes. Files may be gzip-compressed (zlib reads plain files through the same call).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sparseps {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // product(dims) bytes
};

// Reads an unsigned-byte IDX file with `expected_ndim` dimensions. Errors name the file and
// say what is wrong: missing, not gzip/IDX (bad magic), truncated, or trailing bytes.
absl::StatusOr<IdxArray> readIdxFile(const std::string& path, int expected_ndim);

}  // namespace sparseps

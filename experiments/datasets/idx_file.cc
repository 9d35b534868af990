#include "experiments/datasets/idx_file.h"

#include <zlib.h>

#include <memory>

#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// Reads the whole (decompressed) stream; an error if zlib reports a broken stream.
absl::StatusOr<std::vector<uint8_t>> readAll(const std::string& path) {
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::vector<uint8_t> out;
  constexpr unsigned kChunk = 1 << 20;
  while (true) {
    size_t at = out.size();
    out.resize(at + kChunk);
    int n = gzread(file.get(), out.data() + at, kChunk);
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(file.get(), &code);
      return absl::DataLossError(
          absl::StrCat(path, ": broken gzip stream (", msg, "); the file is damaged or truncated"));
    }
    out.resize(at + static_cast<size_t>(n));
    if (n == 0) break;
  }
  // zlib returns a short read without error on a stream that ends early; gzerror says so.
  int code = 0;
  gzerror(file.get(), &code);
  if (code != Z_OK && code != Z_BUF_ERROR) {
    return absl::DataLossError(absl::StrCat(path, ": broken gzip stream"));
  }
  if (code == Z_BUF_ERROR) {
    return absl::DataLossError(absl::StrCat(path, ": gzip stream ends early (truncated file)"));
  }
  return out;
}

uint32_t bigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

absl::StatusOr<IdxArray> readIdxFile(const std::string& path, int expected_ndim) {
  absl::StatusOr<std::vector<uint8_t>> bytes = readAll(path);
  if (!bytes.ok()) return bytes.status();
  const std::vector<uint8_t>& b = *bytes;
  const uint32_t want_magic = 0x0800u | static_cast<uint32_t>(expected_ndim);
  if (b.size() < 4 || bigEndian32(b.data()) != want_magic) {
    return absl::DataLossError(absl::StrCat(
        path, ": bad magic, not an unsigned-byte IDX file with ", expected_ndim,
        " dimensions (expected 0x", absl::Hex(want_magic, absl::kZeroPad8),
        b.size() >= 4
            ? absl::StrCat(", found 0x", absl::Hex(bigEndian32(b.data()), absl::kZeroPad8))
            : std::string(", file shorter than 4 bytes"),
        ")"));
  }
  const size_t header = 4 + 4 * static_cast<size_t>(expected_ndim);
  if (b.size() < header) {
    return absl::DataLossError(absl::StrCat(path, ": truncated IDX header"));
  }
  IdxArray out;
  uint64_t count = 1;
  for (int d = 0; d < expected_ndim; ++d) {
    uint32_t n = bigEndian32(b.data() + 4 + 4 * d);
    out.dims.push_back(n);
    count *= n;
    if (count > (uint64_t{1} << 36)) {
      return absl::DataLossError(absl::StrCat(path, ": implausible IDX sizes"));
    }
  }
  if (b.size() - header < count) {
    return absl::DataLossError(absl::StrCat(path, ": truncated: the header promises ", count,
                                            " data bytes, the file has ", b.size() - header));
  }
  if (b.size() - header > count) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", b.size() - header - count, " unexpected bytes after the data"));
  }
  out.data.assign(b.begin() + static_cast<std::ptrdiff_t>(header), b.end());
  return out;
}

}  // namespace sparseps

#include "optim/state_io.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sparseps {

void StateWriter::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
}

void StateWriter::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
}

void StateWriter::floats(absl::Span<const float> v) {
  u64(v.size());
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    u32(bits);
  }
}

absl::Status StateReader::need(size_t n, absl::string_view what) const {
  if (bytes_.size() - pos_ < n) {
    return absl::DataLossError(absl::StrCat("method state: truncated while reading ", what,
                                            " (need ", n, " bytes at offset ", pos_, ", have ",
                                            bytes_.size() - pos_, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint8_t> StateReader::u8(absl::string_view what) {
  if (auto s = need(1, what); !s.ok()) return s;
  return static_cast<uint8_t>(bytes_[pos_++]);
}

absl::StatusOr<uint32_t> StateReader::u32(absl::string_view what) {
  if (auto s = need(4, what); !s.ok()) return s;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(bytes_[pos_++])} << (8 * i);
  return v;
}

absl::StatusOr<uint64_t> StateReader::u64(absl::string_view what) {
  if (auto s = need(8, what); !s.ok()) return s;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(bytes_[pos_++])} << (8 * i);
  return v;
}

absl::Status StateReader::expectU32(absl::string_view what, uint32_t expected) {
  absl::StatusOr<uint32_t> got = u32(what);
  if (!got.ok()) return got.status();
  if (*got != expected) {
    return absl::FailedPreconditionError(
        absl::StrCat("method state: ", what, " is ", *got, ", this run has ", expected));
  }
  return absl::OkStatus();
}

void StateWriter::indices(absl::Span<const uint32_t> v) {
  u64(v.size());
  for (uint32_t i : v) u32(i);
}

absl::Status StateReader::indices(absl::string_view what, size_t numel,
                                  std::vector<uint32_t>* out) {
  absl::StatusOr<uint64_t> n = u64(what);
  if (!n.ok()) return n.status();
  if (*n > numel) {
    return absl::DataLossError(absl::StrCat("method state: ", what, " holds ", *n,
                                            " indices for a segment of ", numel));
  }
  if (auto s = need(*n * 4, what); !s.ok()) return s;
  out->resize(*n);
  for (size_t i = 0; i < *n; ++i) {
    const uint32_t index = *u32(what);
    if (index >= numel || (i > 0 && index <= (*out)[i - 1])) {
      return absl::DataLossError(absl::StrCat("method state: ", what, " index ", index,
                                              " at position ", i,
                                              " is out of range or out of order"));
    }
    (*out)[i] = index;
  }
  return absl::OkStatus();
}

absl::Status StateReader::floats(absl::string_view what, size_t expected, std::vector<float>* out) {
  absl::StatusOr<uint64_t> n = u64(what);
  if (!n.ok()) return n.status();
  if (*n != expected) {
    return absl::DataLossError(absl::StrCat("method state: ", what, " holds ", *n,
                                            " values, this rule expects ", expected));
  }
  return floatValues(what, expected, out);
}

absl::Status StateReader::floatsAtMost(absl::string_view what, size_t most,
                                       std::vector<float>* out) {
  absl::StatusOr<uint64_t> n = u64(what);
  if (!n.ok()) return n.status();
  if (*n > most) {
    return absl::DataLossError(absl::StrCat("method state: ", what, " holds ", *n,
                                            " values, more than the ", most, " it can"));
  }
  return floatValues(what, *n, out);
}

absl::Status StateReader::floatValues(absl::string_view what, size_t n, std::vector<float>* out) {
  if (auto s = need(n * 4, what); !s.ok()) return s;
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = *u32(what);
    std::memcpy(&(*out)[i], &bits, sizeof bits);
    if (!std::isfinite((*out)[i])) {
      return absl::DataLossError(
          absl::StrCat("method state: ", what, " holds a non-finite value at ", i));
    }
  }
  return absl::OkStatus();
}

absl::Status StateReader::finish() const {
  if (pos_ != bytes_.size()) {
    return absl::DataLossError(
        absl::StrCat("method state: ", bytes_.size() - pos_, " unexpected bytes after the end"));
  }
  return absl::OkStatus();
}

void writeStateHeader(StateWriter& w, StateKind kind) {
  w.u32(kStateMagic);
  w.u32(kStateFormatVersion);
  w.u8(static_cast<uint8_t>(kind));
}

absl::Status checkStateHeader(StateReader& r, StateKind kind) {
  absl::StatusOr<uint32_t> magic = r.u32("magic");
  if (!magic.ok()) return magic.status();
  if (*magic != kStateMagic) {
    return absl::DataLossError("method state: bad magic, these bytes are not a method state");
  }
  absl::StatusOr<uint32_t> version = r.u32("format version");
  if (!version.ok()) return version.status();
  if (*version != kStateFormatVersion) {
    return absl::DataLossError(absl::StrCat("method state: format version ", *version,
                                            ", this build reads ", kStateFormatVersion));
  }
  absl::StatusOr<uint8_t> k = r.u8("kind");
  if (!k.ok()) return k.status();
  if (*k != static_cast<uint8_t>(kind)) {
    return absl::FailedPreconditionError(
        absl::StrCat("method state: written by a rule of kind ", int{*k}, ", this rule is kind ",
                     static_cast<int>(kind), " (another downlink, or a worker's state?)"));
  }
  return absl::OkStatus();
}

void writeSpecs(StateWriter& w, const SegmentSpecs& specs) {
  w.u32(static_cast<uint32_t>(specs.size()));
  for (const SegmentSpec& spec : specs) {
    w.u32(spec.id);
    w.u64(spec.numel);
    w.u8(spec.compressed ? 1 : 0);
  }
}

absl::Status expectSpecs(StateReader& r, const SegmentSpecs& specs) {
  if (auto s = r.expectU32("segment count", static_cast<uint32_t>(specs.size())); !s.ok()) return s;
  for (const SegmentSpec& spec : specs) {
    if (auto s = r.expectU32("segment id", spec.id); !s.ok()) return s;
    absl::StatusOr<uint64_t> numel = r.u64("segment numel");
    if (!numel.ok()) return numel.status();
    if (*numel != spec.numel) {
      return absl::FailedPreconditionError(absl::StrCat("method state: segment ", spec.id, " has ",
                                                        *numel, " elements, this run has ",
                                                        spec.numel));
    }
    absl::StatusOr<bool> compressed = readFlag(r, "segment compressed flag");
    if (!compressed.ok()) return compressed.status();
    if (*compressed != spec.compressed) {
      return absl::FailedPreconditionError(absl::StrCat(
          "method state: segment ", spec.id, " compressed flag is ", *compressed,
          ", this run has ", spec.compressed));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> readFlag(StateReader& r, absl::string_view what) {
  absl::StatusOr<uint8_t> v = r.u8(what);
  if (!v.ok()) return v.status();
  if (*v > 1) return absl::DataLossError(absl::StrCat("method state: ", what, " is not 0 or 1"));
  return *v == 1;
}

}  // namespace sparseps

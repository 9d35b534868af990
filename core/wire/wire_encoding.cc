#include "core/wire/wire_encoding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/numeric/bits.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compressors/apply.h"
#include "compressors/kernels/simd.h"
#include "compressors/kernels/stream_copy.h"
#include "core/wire/wire_bytes.h"
#include "core/wire/wire_checksum.h"
#include "compressors/codes.h"
#include "compressors/kernels/half.h"
#include "compressors/random_k.h"
#include "core/wire/wire_header.h"
#include "core/wire/wire_varint.h"

namespace sparseps {

using wire::loadArrayLe;
using wire::loadLe;
using wire::storeArrayLe;
using wire::storeLe;

Encoding codeEncoding(Code code) { return static_cast<Encoding>(codeFormat(code).wire_tag); }

Code encodingCode(Encoding encoding) { return codeOfWireTag(static_cast<uint8_t>(encoding)); }

namespace {

size_t bitmapBytes(size_t numel) { return (numel + 7) / 8; }

// Bytes of the LEB128 gaps of a sparse segment's indices.
size_t deltaVarintIndexBytes(const SegmentData& segment) {
  if (segment.dense) return segment.numel;  // every gap is 0: one byte each
  size_t bytes = 0;
  uint32_t next = 0;  // smallest index the next one may take
  for (uint32_t index : segment.indices) {
    bytes += wire::varintBytes(index - next);
    next = index + 1;
  }
  return bytes;
}

bool allFitHalf(const std::vector<float>& values) {
  for (float v : values) {
    if (!fitsHalf(v)) return false;
  }
  return true;
}

// Dense bodies are copied and hashed in chunks of this many floats: each chunk of the
// source is hashed (and, on decode, its values checked) while it is still in cache.
constexpr size_t kChunkFloats = 16384;

// Copies n floats of a dense body from src to dst (bytes as they travel: little-endian)
// and hashes them from src, which the copy has just brought into cache. A body larger
// than the cache is copied with streaming stores (compressors/kernels/stream_copy.h).
void copyDenseChunk(uint8_t* dst, const uint8_t* src, size_t n, bool streaming,
                    PayloadChecksum* checksum) {
  if (streaming) {
    streamCopy(dst, src, n * 4);
  } else {
    std::memcpy(dst, src, n * 4);
  }
  checksum->add(src, n * 4);
}

// The largest magnitude among n floats at bytes (host order), as the bits of its absolute
// value: these order as the magnitudes do, with inf and NaN above every finite value, so
// kBounded refuses a block exactly when its largest is kBoundExponent << 23 (2^64) or more.
// A plain integer max over the block vectorizes. Bytes, not a float pointer: a received
// body need not be aligned.
inline uint32_t magnitudeBits(const uint8_t* bytes, size_t i) {
  uint32_t bits;
  std::memcpy(&bits, bytes + 4 * i, sizeof bits);
  return bits & 0x7fffffffu;
}

constexpr uint32_t kRefusedBits = kBoundExponent << 23;

SPARSEPS_MULTIVERSION uint32_t largestBits(const uint8_t* bytes, size_t n) {
  uint32_t largest = 0;
  for (size_t i = 0; i < n; ++i) largest = std::max(largest, magnitudeBits(bytes, i));
  return largest;
}

// Checks n floats at bytes against kBounded, raises *largest to their largest magnitude's
// bits and adds their squares to *squares (when given; the bytes are in cache now, so the
// sum costs no pass over memory of its own); the error names the first refused one (found
// only then): element first_element + i, or elements[i] for a sparse body.
absl::Status checkBounded(const uint8_t* bytes, size_t n, size_t first_element,
                          const uint32_t* elements, uint32_t* largest, double* squares) {
  const uint32_t top = largestBits(bytes, n);
  if (top < kRefusedBits) {
    *largest = std::max(*largest, top);
    if (squares != nullptr) *squares += sumSquaresLe(bytes, n);
    return absl::OkStatus();
  }
  size_t i = 0;
  while (magnitudeBits(bytes, i) < kRefusedBits) ++i;
  float v;
  std::memcpy(&v, bytes + 4 * i, sizeof v);
  const size_t element = elements != nullptr ? elements[i] : first_element + i;
  if (!std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("non-finite value ", v, " at element ", element));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "value ", v, " at element ", element,
      " is beyond the bound 2^64 on any value (a diverged or a hostile sender)"));
}

absl::Status truncated(const char* what, uint64_t need, uint64_t left) {
  return absl::InvalidArgumentError(
      absl::StrCat("truncated payload: ", what, " needs ", need, " bytes, ", left, " left"));
}

// Where a segment's body is read from, and what its reader checks and reports
// (readSegmentBody's arguments).
struct BodyIn {
  Encoding encoding;
  uint32_t numel;
  uint32_t nonzeros;
  const uint8_t* end;
  ValueCheck check;
  bool borrow_dense;
  PayloadChecksum* checksum;
  uint32_t* largest;
  double* squares;  // may be null
};

// The end of a body of explicit floats, read up to p: its values checked under kBounded,
// its bytes hashed, *in moved past it.
absl::Status finishFloats(const BodyIn& b, const uint8_t** in, const uint8_t* p,
                          const SegmentData& segment) {
  if (b.check == ValueCheck::kBounded) {
    if (absl::Status s = checkBounded(reinterpret_cast<const uint8_t*>(segment.values.data()),
                                      segment.values.size(), 0, segment.indices.data(),
                                      b.largest, b.squares);
        !s.ok()) {
      return s;
    }
  }
  b.checksum->add(*in, static_cast<size_t>(p - *in));
  *in = p;
  return absl::OkStatus();
}

// An explicit-float body's count, before anything is sized by it.
absl::Status checkNonzeros(const BodyIn& b) {
  if (b.nonzeros <= b.numel) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("nonzero count ", b.nonzeros,
                                                 " larger than the segment's numel ", b.numel));
}

// Each encoding below is its body's size, writer and reader. A writer writes the body at
// p (room for its size), hashes it and returns its end; a reader reads the body at *in
// into a segment whose id, numel and form the caller set, refusing what is not one.

size_t nonzerosOf(const SegmentData& s) { return s.dense ? s.numel : s.nonzeros(); }

// dense_f32: numel values. Copied and hashed chunk by chunk, each while in cache; a
// received body may be borrowed instead of copied.
size_t denseBytes(const SegmentData& s, Encoding, size_t) { return size_t{s.numel} * 4; }

uint8_t* writeDense(const SegmentData& s, Encoding, uint8_t* p, PayloadChecksum* checksum) {
  const size_t numel = s.numel;
  if (!wire::kHostLittleEndian) {
    storeArrayLe(p, s.values.data(), numel);
    checksum->add(p, numel * 4);
    return p + numel * 4;
  }
  const bool streaming = numel * 4 >= kStreamCopyMinBytes;
  const uint8_t* src =
      s.borrowed != nullptr ? s.borrowed : reinterpret_cast<const uint8_t*>(s.values.data());
  for (size_t i = 0; i < numel; i += kChunkFloats) {
    const size_t n = std::min(kChunkFloats, numel - i);
    copyDenseChunk(p, src + 4 * i, n, streaming, checksum);
    p += n * 4;
  }
  return p;
}

absl::Status readDense(const BodyIn& b, const uint8_t** in, SegmentData* out) {
  if (absl::Status s = checkNonzeros(b); !s.ok()) return s;
  const uint8_t* p = *in;
  const uint32_t numel = b.numel;
  if (b.nonzeros != numel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dense segment announces ", b.nonzeros, " nonzeros, must equal numel ", numel));
  }
  const uint64_t need = uint64_t{numel} * 4;
  const uint64_t left = static_cast<uint64_t>(b.end - p);
  if (need > left) return truncated("dense values", need, left);
  SegmentData& segment = *out;
  segment.dense = true;
  segment.indices.clear();
  // Borrowed values are read in place: each chunk is hashed and checked, nothing copied.
  const bool borrow = b.borrow_dense && wire::kHostLittleEndian;
  if (borrow) {
    segment.values.clear();
  } else {
    segment.values.resize(numel);
  }
  float* values = segment.values.data();
  const bool streaming = need >= kStreamCopyMinBytes;
  for (size_t i = 0; i < numel; i += kChunkFloats) {
    const size_t n = std::min<size_t>(kChunkFloats, numel - i);
    if (borrow) {
      b.checksum->add(p, n * 4);
    } else if (wire::kHostLittleEndian) {
      copyDenseChunk(reinterpret_cast<uint8_t*>(values + i), p, n, streaming, b.checksum);
    } else {
      b.checksum->add(p, n * 4);
      loadArrayLe(p, values + i, n);
    }
    if (b.check == ValueCheck::kBounded) {
      // Checked on the bytes as received (in cache), not on the streamed-out copy.
      const uint8_t* checked =
          wire::kHostLittleEndian ? p : reinterpret_cast<const uint8_t*>(values + i);
      if (absl::Status s = checkBounded(checked, n, i, nullptr, b.largest, b.squares); !s.ok()) {
        return s;
      }
    }
    p += n * 4;
  }
  if (borrow) segment.borrowed = *in;
  *in = p;
  return absl::OkStatus();
}

// index_value_f32: nonzeros u32 indices, then their f32 values.
size_t indexValueBytes(const SegmentData& s, Encoding, size_t) { return nonzerosOf(s) * 8; }

uint8_t* writeIndexValue(const SegmentData& s, Encoding, uint8_t* p, PayloadChecksum* checksum) {
  uint8_t* start = p;
  storeArrayLe(p, s.indices.data(), s.indices.size());
  p += s.indices.size() * 4;
  storeArrayLe(p, s.values.data(), s.values.size());
  p += s.values.size() * 4;
  checksum->add(start, static_cast<size_t>(p - start));
  return p;
}

absl::Status readIndexValue(const BodyIn& b, const uint8_t** in, SegmentData* out) {
  if (absl::Status s = checkNonzeros(b); !s.ok()) return s;
  const uint8_t* p = *in;
  const uint32_t nonzeros = b.nonzeros;
  const uint64_t need = uint64_t{nonzeros} * 8;
  const uint64_t left = static_cast<uint64_t>(b.end - p);
  if (need > left) return truncated("index/value pairs", need, left);
  SegmentData& segment = *out;
  segment.indices.resize(nonzeros);
  loadArrayLe(p, segment.indices.data(), nonzeros);
  p += size_t{nonzeros} * 4;
  segment.values.resize(nonzeros);
  loadArrayLe(p, segment.values.data(), nonzeros);
  p += size_t{nonzeros} * 4;
  for (size_t i = 0; i < nonzeros; ++i) {
    const uint32_t index = segment.indices[i];
    if (index >= b.numel) {
      return absl::InvalidArgumentError(
          absl::StrCat("index ", index, " out of range (numel ", b.numel, ")"));
    }
    if (i > 0 && index <= segment.indices[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat("indices not strictly increasing: ",
                                                     segment.indices[i - 1], " then ", index,
                                                     " at position ", i));
    }
  }
  return finishFloats(b, in, p, segment);
}

// delta_varint_f32 and delta_varint_f16: nonzeros values (f32, or IEEE half), then the
// LEB128 gaps of the indices (wire_encoding.h).
size_t deltaValueBytes(Encoding e) { return e == Encoding::kDeltaVarintF32 ? 4 : 2; }

size_t deltaVarintBytes(const SegmentData& s, Encoding e, size_t varint_bytes) {
  return nonzerosOf(s) * deltaValueBytes(e) + varint_bytes;
}

uint8_t* writeDeltaVarint(const SegmentData& s, Encoding e, uint8_t* p,
                          PayloadChecksum* checksum) {
  uint8_t* start = p;
  if (e == Encoding::kDeltaVarintF32) {
    storeArrayLe(p, s.values.data(), s.values.size());
    p += s.values.size() * 4;
  } else {
    for (float v : s.values) {
      storeLe<uint16_t>(p, floatToHalf(v));
      p += 2;
    }
  }
  uint32_t next = 0;
  for (uint32_t index : s.indices) {
    p += wire::putVarint(p, index - next);
    next = index + 1;
  }
  checksum->add(start, static_cast<size_t>(p - start));
  return p;
}

absl::Status readDeltaVarint(const BodyIn& b, const uint8_t** in, SegmentData* out) {
  if (absl::Status s = checkNonzeros(b); !s.ok()) return s;
  const uint8_t* p = *in;
  const uint32_t nonzeros = b.nonzeros;
  const size_t value_bytes = deltaValueBytes(b.encoding);
  // Every gap takes at least one byte.
  const uint64_t need = uint64_t{nonzeros} * (value_bytes + 1);
  const uint64_t left = static_cast<uint64_t>(b.end - p);
  if (need > left) return truncated("delta-varint values and gaps", need, left);
  SegmentData& segment = *out;
  segment.values.resize(nonzeros);
  if (value_bytes == 4) {
    loadArrayLe(p, segment.values.data(), nonzeros);
  } else {
    for (size_t i = 0; i < nonzeros; ++i) {
      segment.values[i] = halfToFloat(loadLe<uint16_t>(p + 2 * i));
    }
  }
  p += size_t{nonzeros} * value_bytes;
  segment.indices.resize(nonzeros);
  uint64_t next = 0;  // smallest index the next one may take
  for (size_t i = 0; i < nonzeros; ++i) {
    uint32_t gap = 0;
    switch (wire::getVarint(&p, b.end, &gap)) {
      case wire::VarintResult::kOk: break;
      case wire::VarintResult::kTruncated:
        return absl::InvalidArgumentError(absl::StrCat(
            "truncated payload: varint gap ", i, " of ", nonzeros, " runs past the end"));
      case wire::VarintResult::kOverflow:
        return absl::InvalidArgumentError(
            absl::StrCat("varint overflow in gap ", i, " (more than 32 bits)"));
    }
    const uint64_t index = next + gap;
    if (index >= b.numel) {
      return absl::InvalidArgumentError(
          absl::StrCat("index ", index, " out of range (numel ", b.numel, ") at position ", i));
    }
    segment.indices[i] = static_cast<uint32_t>(index);
    next = index + 1;
  }
  return finishFloats(b, in, p, segment);
}

// bitmap_f32: ceil(numel / 8) bitmap bytes, then the values in index order.
size_t bitmapBodyBytes(const SegmentData& s, Encoding, size_t) {
  return bitmapBytes(s.numel) + nonzerosOf(s) * 4;
}

uint8_t* writeBitmap(const SegmentData& s, Encoding, uint8_t* p, PayloadChecksum* checksum) {
  uint8_t* start = p;
  const size_t bitmap_bytes = bitmapBytes(s.numel);
  std::memset(p, 0, bitmap_bytes);
  for (uint32_t index : s.indices) p[index / 8] |= static_cast<uint8_t>(1u << (index % 8));
  p += bitmap_bytes;
  storeArrayLe(p, s.values.data(), s.values.size());
  p += s.values.size() * 4;
  checksum->add(start, static_cast<size_t>(p - start));
  return p;
}

absl::Status readBitmap(const BodyIn& b, const uint8_t** in, SegmentData* out) {
  if (absl::Status s = checkNonzeros(b); !s.ok()) return s;
  const uint8_t* p = *in;
  const uint32_t numel = b.numel;
  const uint32_t nonzeros = b.nonzeros;
  const size_t bitmap_bytes = bitmapBytes(numel);
  const uint64_t need = uint64_t{bitmap_bytes} + uint64_t{nonzeros} * 4;
  const uint64_t left = static_cast<uint64_t>(b.end - p);
  if (need > left) return truncated("bitmap and values", need, left);
  const uint8_t* bitmap = p;
  if (numel % 8 != 0 && (bitmap[bitmap_bytes - 1] >> (numel % 8)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bitmap marks an index out of range (numel ", numel, ")"));
  }
  // Whole 64-bit words first (most are zero in a sparse bitmap), then the tail bytes.
  const size_t words = bitmap_bytes / 8;
  size_t marked = 0;
  for (size_t w = 0; w < words; ++w) marked += absl::popcount(loadLe<uint64_t>(bitmap + 8 * w));
  for (size_t j = 8 * words; j < bitmap_bytes; ++j) marked += absl::popcount(bitmap[j]);
  if (marked != nonzeros) {
    return absl::InvalidArgumentError(
        absl::StrCat("bitmap marks ", marked, " elements, segment announces ", nonzeros));
  }
  SegmentData& segment = *out;
  segment.indices.resize(nonzeros);
  uint32_t* out_index = segment.indices.data();
  for (size_t w = 0; w < words; ++w) {
    for (uint64_t bits = loadLe<uint64_t>(bitmap + 8 * w); bits != 0; bits &= bits - 1) {
      *out_index++ = static_cast<uint32_t>(64 * w + absl::countr_zero(bits));
    }
  }
  for (size_t j = 8 * words; j < bitmap_bytes; ++j) {
    for (uint32_t bits = bitmap[j]; bits != 0; bits &= bits - 1) {
      *out_index++ = static_cast<uint32_t>(8 * j + absl::countr_zero(bits));
    }
  }
  p += bitmap_bytes;
  segment.values.resize(nonzeros);
  loadArrayLe(p, segment.values.data(), nonzeros);
  p += size_t{nonzeros} * 4;
  return finishFloats(b, in, p, segment);
}

// seeded_f32: the u64 index seed, then the values; the indices are redrawn from the seed.
size_t seededBytes(const SegmentData& s, Encoding, size_t) { return 8 + nonzerosOf(s) * 4; }

uint8_t* writeSeeded(const SegmentData& s, Encoding, uint8_t* p, PayloadChecksum* checksum) {
  uint8_t* start = p;
  storeLe<uint64_t>(p, *s.index_seed);
  p += 8;
  storeArrayLe(p, s.values.data(), s.values.size());
  p += s.values.size() * 4;
  checksum->add(start, static_cast<size_t>(p - start));
  return p;
}

absl::Status readSeeded(const BodyIn& b, const uint8_t** in, SegmentData* out) {
  if (absl::Status s = checkNonzeros(b); !s.ok()) return s;
  const uint8_t* p = *in;
  const uint32_t nonzeros = b.nonzeros;
  const uint64_t need = 8 + uint64_t{nonzeros} * 4;
  const uint64_t left = static_cast<uint64_t>(b.end - p);
  if (need > left) return truncated("index seed and values", need, left);
  SegmentData& segment = *out;
  segment.index_seed = loadLe<uint64_t>(p);
  p += 8;
  segment.values.resize(nonzeros);
  loadArrayLe(p, segment.values.data(), nonzeros);
  p += size_t{nonzeros} * 4;
  randomKIndices(b.numel, nonzeros, *segment.index_seed, &segment.indices);
  return finishFloats(b, in, p, segment);
}

// The coded encodings, one per code (compressors/codes.h): u32 code argument, u32
// parameter count, the f32 parameters, then the packed codes.
constexpr size_t kCodedPrefixBytes = 8;

size_t codedBytes(const SegmentData& s, Encoding, size_t) {
  return kCodedPrefixBytes + 4 * s.params.size() + packedBytes(s.code, s.code_arg, s.numel);
}

uint8_t* writeCoded(const SegmentData& s, Encoding, uint8_t* p, PayloadChecksum* checksum) {
  uint8_t* start = p;
  storeLe<uint32_t>(p, s.code_arg);
  storeLe<uint32_t>(p + 4, static_cast<uint32_t>(s.params.size()));
  p += kCodedPrefixBytes;
  storeArrayLe(p, s.params.data(), s.params.size());
  p += s.params.size() * 4;
  if (!s.packed.empty()) {  // a low-rank segment has none (and data() may be null)
    std::memcpy(p, s.packed.data(), s.packed.size());
  }
  p += s.packed.size();
  checksum->add(start, static_cast<size_t>(p - start));
  return p;
}

// Sizes bounded by the bytes left before anything is allocated, then every code checked
// (validateCoded).
absl::Status readCoded(const BodyIn& b, const uint8_t** in, SegmentData* out) {
  const uint8_t* p = *in;
  SegmentData& segment = *out;
  if (b.nonzeros != b.numel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "coded segment announces ", b.nonzeros, " nonzeros, must equal numel ", b.numel));
  }
  segment.indices.clear();  // a reused slot may hold a sparse or dense segment's floats
  segment.values.clear();
  if (static_cast<uint64_t>(b.end - p) < kCodedPrefixBytes) {
    return truncated("code argument and parameter count", kCodedPrefixBytes,
                     static_cast<uint64_t>(b.end - p));
  }
  segment.code = encodingCode(b.encoding);
  segment.code_arg = loadLe<uint32_t>(p);
  const uint32_t param_count = loadLe<uint32_t>(p + 4);
  p += kCodedPrefixBytes;
  // The width depends on the argument: checked before it sizes anything.
  if (absl::Status s = checkCodeArg(segment.code, segment.code_arg); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(codeName(segment.code), " segment: ", s.message()));
  }
  const uint64_t packed = packedBytes(segment.code, segment.code_arg, segment.numel);
  const uint64_t need = uint64_t{param_count} * 4 + packed;
  const uint64_t left = static_cast<uint64_t>(b.end - p);
  if (need > left) return truncated("coded parameters and codes", need, left);
  // What the encoder refuses (validateSegment) is refused here too: what decodes encodes.
  const uint64_t segment_bytes = kSegmentHeaderBytes + kCodedPrefixBytes + need;
  if (segment_bytes > maxEncodedBytes(segment.numel)) {
    return absl::InvalidArgumentError(absl::StrCat(
        codeName(segment.code), " segment takes ", segment_bytes, " bytes, more than its ",
        segment.numel, " elements may on the wire (", maxEncodedBytes(segment.numel), ")"));
  }
  segment.params.resize(param_count);
  loadArrayLe(p, segment.params.data(), param_count);
  p += size_t{param_count} * 4;
  segment.packed.assign(p, p + packed);
  p += packed;
  if (absl::Status s = validateCoded(segment, b.check == ValueCheck::kBounded); !s.ok()) {
    return s;
  }
  if (b.check == ValueCheck::kBounded) {
    *b.largest = std::max(*b.largest, largestBits(reinterpret_cast<const uint8_t*>(
                                                      segment.params.data()),
                                                  segment.params.size()));
  }
  b.checksum->add(*in, static_cast<size_t>(p - *in));
  *in = p;
  return absl::OkStatus();
}

// One entry per float encoding, at its tag, and one for every code's.
struct Format {
  const char* name;
  // Bytes of the body; varint_bytes: the delta-varint gaps' (deltaVarintIndexBytes).
  size_t (*body_bytes)(const SegmentData& s, Encoding e, size_t varint_bytes);
  uint8_t* (*write)(const SegmentData& s, Encoding e, uint8_t* p, PayloadChecksum* checksum);
  absl::Status (*read)(const BodyIn& b, const uint8_t** in, SegmentData* out);
};

constexpr Format kFormats[] = {
    {nullptr, nullptr, nullptr, nullptr},  // tag 0: none
    {"dense_f32", denseBytes, writeDense, readDense},
    {"index_value_f32", indexValueBytes, writeIndexValue, readIndexValue},
    {"delta_varint_f32", deltaVarintBytes, writeDeltaVarint, readDeltaVarint},
    {"delta_varint_f16", deltaVarintBytes, writeDeltaVarint, readDeltaVarint},
    {"bitmap_f32", bitmapBodyBytes, writeBitmap, readBitmap},
    {"seeded_f32", seededBytes, writeSeeded, readSeeded},
};
static_assert(std::size(kFormats) == kFirstCodeWireTag, "one format per float encoding tag");
constexpr Format kCodedFormat = {nullptr, codedBytes, writeCoded, readCoded};  // name: the code's

// The format of a known tag; null for an unknown one.
const Format* formatOf(Encoding encoding) {
  const size_t tag = static_cast<size_t>(encoding);
  if (tag >= 1 && tag < std::size(kFormats)) return &kFormats[tag];
  return encodingCode(encoding) != Code::kNone ? &kCodedFormat : nullptr;
}

}  // namespace

bool isEncoding(uint8_t tag) { return formatOf(static_cast<Encoding>(tag)) != nullptr; }

const char* encodingName(Encoding encoding) {
  if (const Code code = encodingCode(encoding); code != Code::kNone) {
    return codeFormat(code).wire_name;
  }
  const Format* format = formatOf(encoding);
  return format != nullptr ? format->name : "unknown";
}

size_t encodedBytes(const SegmentData& segment, Encoding encoding) {
  const bool varint =
      encoding == Encoding::kDeltaVarintF32 || encoding == Encoding::kDeltaVarintF16;
  return kSegmentHeaderBytes +
         formatOf(encoding)->body_bytes(segment, encoding,
                                        varint ? deltaVarintIndexBytes(segment) : 0);
}

namespace wire {

absl::StatusOr<EncodingChoice> chooseEncoding(const SegmentData& segment,
                                              std::optional<Encoding> forced, bool allow_f16) {
  if (segment.dense) {
    return EncodingChoice{Encoding::kDenseF32, encodedBytes(segment, Encoding::kDenseF32)};
  }
  if (segment.coded()) {
    const Encoding encoding = codeEncoding(segment.code);
    return EncodingChoice{encoding, encodedBytes(segment, encoding)};
  }
  if (segment.index_seed && !forced) {
    return EncodingChoice{Encoding::kSeededF32, encodedBytes(segment, Encoding::kSeededF32)};
  }
  if (forced) {
    if (*forced == Encoding::kDenseF32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment ", segment.segment_id, " is sparse: dense_f32 would lose its sparse flag"));
    }
    if (*forced == Encoding::kDeltaVarintF16 && !allFitHalf(segment.values)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment ", segment.segment_id, " has a value beyond the f16 range (|v| >= 65520)"));
    }
    return EncodingChoice{*forced, encodedBytes(segment, *forced)};
  }
  const size_t varint_bytes = deltaVarintIndexBytes(segment);
  auto bytesOf = [&](Encoding e) {
    return kSegmentHeaderBytes + formatOf(e)->body_bytes(segment, e, varint_bytes);
  };
  EncodingChoice best{Encoding::kIndexValueF32, bytesOf(Encoding::kIndexValueF32)};
  for (Encoding candidate :
       {Encoding::kDeltaVarintF32, Encoding::kDeltaVarintF16, Encoding::kBitmapF32}) {
    if (candidate == Encoding::kDeltaVarintF16 && !allow_f16) continue;
    const size_t bytes = bytesOf(candidate);
    if (bytes < best.bytes) best = {candidate, bytes};
  }
  if (best.encoding == Encoding::kDeltaVarintF16 && !allFitHalf(segment.values)) {
    // A finite value beyond the half range: the smallest encoding with f32 values instead.
    return chooseEncoding(segment, std::nullopt, false);
  }
  return best;
}

absl::Status validateSegment(const SegmentData& segment) {
  if (segment.coded()) {
    if (absl::Status s = validateCoded(segment, /*bound_values=*/false); !s.ok()) return s;
    const size_t bytes = encodedBytes(segment, codeEncoding(segment.code));
    if (bytes > maxEncodedBytes(segment.numel)) {
      return absl::InvalidArgumentError(absl::StrCat(
          codeName(segment.code), " segment ", segment.segment_id, " takes more bytes (", bytes,
          ") than its ", segment.numel, " elements may on the wire"));
    }
    return absl::OkStatus();
  }
  if (segment.dense) {
    const bool values_ok = segment.borrowed != nullptr ? segment.values.empty()
                                                       : segment.values.size() == segment.numel;
    if (!segment.indices.empty() || !values_ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dense segment ", segment.segment_id, " has ", segment.values.size(),
          " values", segment.borrowed != nullptr ? " besides its borrowed ones" : "", " and ",
          segment.indices.size(), " indices, expected ", segment.numel,
          " values and no indices"));
    }
    return absl::OkStatus();
  }
  if (segment.indices.size() != segment.values.size()) {
    return absl::InvalidArgumentError(absl::StrCat("sparse segment ", segment.segment_id, " has ",
                                                   segment.indices.size(), " indices but ",
                                                   segment.values.size(), " values"));
  }
  for (size_t i = 0; i < segment.indices.size(); ++i) {
    const uint32_t index = segment.indices[i];
    if (index >= segment.numel) {
      return absl::InvalidArgumentError(absl::StrCat("sparse segment ", segment.segment_id,
                                                     ": index ", index, " out of range (numel ",
                                                     segment.numel, ")"));
    }
    if (i > 0 && index <= segment.indices[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat("sparse segment ", segment.segment_id,
                                                     ": indices not strictly increasing at ", i));
    }
  }
  return absl::OkStatus();
}

size_t writeSegment(const SegmentData& segment, Encoding encoding, uint8_t* out,
                    PayloadChecksum* checksum) {
  const uint32_t nonzeros = static_cast<uint32_t>(
      segment.dense || segment.coded() ? segment.numel : segment.nonzeros());
  out[0] = static_cast<uint8_t>(encoding);
  storeLe<uint32_t>(out + 1, segment.segment_id);
  storeLe<uint32_t>(out + 5, segment.numel);
  storeLe<uint32_t>(out + 9, nonzeros);
  checksum->add(out, kSegmentHeaderBytes);
  const uint8_t* end =
      formatOf(encoding)->write(segment, encoding, out + kSegmentHeaderBytes, checksum);
  return static_cast<size_t>(end - out);
}

absl::Status readSegmentBody(Encoding encoding, uint32_t segment_id, uint32_t numel,
                             uint32_t nonzeros, const uint8_t** in, const uint8_t* end,
                             ValueCheck check, bool borrow_dense, SegmentData* out,
                             PayloadChecksum* checksum, uint32_t* largest, double* squares) {
  const Format* format = formatOf(encoding);
  if (format == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown encoding tag ", static_cast<int>(encoding)));
  }
  SegmentData& segment = *out;
  segment.segment_id = segment_id;
  segment.numel = numel;
  segment.dense = false;
  segment.clearCoding();
  return format->read(
      BodyIn{encoding, numel, nonzeros, end, check, borrow_dense, checksum, largest, squares}, in,
      out);
}

}  // namespace wire
}  // namespace sparseps

#pragma once
// The per-segment encodings of a message payload. Each segment starts with a 13-byte
// header (tag u8, segment id u32, numel u32, nonzeros u32, little-endian), then:
//   kDenseF32        numel f32 values (nonzeros == numel)
//   kIndexValueF32   nonzeros u32 indices, then nonzeros f32 values: 8 B per nonzero
//   kDeltaVarintF32  nonzeros f32 values, then nonzeros LEB128 gaps (see below)
//   kDeltaVarintF16  as above with IEEE half values (lossy: only when asked for)
//   kBitmapF32       ceil(numel / 8) bitmap bytes (bit i of byte j is element 8j + i;
//                    padding bits zero), then nonzeros f32 values in index order
//   kSeededF32       u64 index seed, then nonzeros f32 values; the indices are
//                    randomKIndices(numel, nonzeros, seed) (compressors/random_k.h)
// and the coded segments (compressors/codes.h), one encoding per code, nonzeros == numel,
// its tag the code's CodeFormat::wire_tag (7 and up; today sign 7, ternary 8, qsgd 9,
// natural 10, f16 11, bf16 12, low-rank 13):
//                    u32 code argument, u32 parameter count, the f32 parameters, then
//                    the packed codes (ceil(width * numel / 8) bytes)
// Delta-varint gaps: the first index itself, then index[i] - index[i-1] - 1 for the rest,
// so strictly increasing indices cost one byte per gap below 128.
// The encoding keeps a segment's dense flag (a reply's dense segment is the model, a
// sparse one a delta): dense SegmentData travels as kDenseF32 and only as that, sparse
// SegmentData in one of the four sparse encodings, even when every index is set.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "compressors/codes.h"
#include "compressors/segment_data.h"
#include "core/wire/wire_checksum.h"
#include "core/wire/wire_header.h"

namespace sparseps {

enum class Encoding : uint8_t {
  kDenseF32 = 1,
  kIndexValueF32 = 2,
  kDeltaVarintF32 = 3,
  kDeltaVarintF16 = 4,
  kBitmapF32 = 5,
  kSeededF32 = 6,
  // A coded segment's encoding is its code's wire tag (codeEncoding).
};

// The encodings of explicit floats: dense, and the sparse ones a sender may force.
inline constexpr Encoding kFloatEncodings[] = {Encoding::kDenseF32, Encoding::kIndexValueF32,
                                               Encoding::kDeltaVarintF32,
                                               Encoding::kDeltaVarintF16, Encoding::kBitmapF32};

// The encoding of a code (code != kNone), and the code of a coded encoding (else kNone).
Encoding codeEncoding(Code code);
Code encodingCode(Encoding encoding);

// Whether tag is an encoding's: a float encoding's or a code's.
bool isEncoding(uint8_t tag);

const char* encodingName(Encoding encoding);

// The values a decoder accepts. kBounded: finite, and of magnitude below kValueBound
// (compressors/codes.h). No
// gradient, update, model or BN value of a training run comes near 2^64, so a larger one
// comes from a diverged or a hostile sender; refusing it at decode names that sender
// before anything is applied, and an update under the bound cannot carry a model under it
// past a float's range. kAny: every bit pattern (tests, tools).
enum class ValueCheck { kBounded, kAny };

// The most bytes any encoding can take for a segment of numel elements: its 13-byte header,
// 8 per element (index/value pairs with every element set; per element dense takes 4 B,
// bitmap at most 4.125 B, delta-varint at most 5 B: a gap g costs at most 1 + g bytes and
// the gaps plus one per index add up to at most numel), and kSegmentSlackBytes for what
// does not grow with numel: a seeded segment's 8-byte seed, a coded one's 8-byte prefix
// and its few params (a 1-element fp16 segment takes 13 + 8 + 2 bytes). Every coded
// segment a compressor makes fits (at most 4 B of params and 2 B of codes per element,
// plus one bucket's params); the encoder and the decoder refuse one that does not. A
// receiver sizes its limits from this.
inline constexpr uint64_t kSegmentSlackBytes = 16;
inline constexpr uint64_t maxEncodedBytes(uint64_t numel) {
  return kSegmentHeaderBytes + kSegmentSlackBytes + 8 * numel;
}

// Exact encoded size of segment in encoding, its 13-byte segment header included. For a
// dense segment in a sparse encoding it counts every element as a nonzero.
size_t encodedBytes(const SegmentData& segment, Encoding encoding);

namespace wire {

struct EncodingChoice {
  Encoding encoding;
  size_t bytes;  // encodedBytes(segment, encoding)
};

// The encoding a segment travels in: kDenseF32 for dense segments, the code's encoding
// for coded ones, kSeededF32 for sparse ones with an index seed; for other sparse ones the
// forced encoding where given, else the smallest sparse encoding (kDeltaVarintF16 only with allow_f16 and when no finite value
// would round to an infinite half). Fails when a forced kDeltaVarintF16 meets such a value.
absl::StatusOr<EncodingChoice> chooseEncoding(const SegmentData& segment,
                                              std::optional<Encoding> forced, bool allow_f16);

// Checks a segment before encoding: values/indices sizes, indices strictly increasing
// and below numel; a coded segment as validateCoded does, and within maxEncodedBytes.
absl::Status validateSegment(const SegmentData& segment);

// Writes a segment (already validated) in the encoding chooseEncoding gave it at out,
// which has room for its encodedBytes; returns the bytes written. Adds every byte written
// to checksum (a dense body chunk by chunk, each while it is still in cache).
size_t writeSegment(const SegmentData& segment, Encoding encoding, uint8_t* out,
                    PayloadChecksum* checksum);

// Reads one segment body (the bytes after its 13-byte header) from [*in, end) into *out,
// reusing its buffers, bounding every count by numel and the bytes left before it sizes
// anything; adds the body's bytes to checksum and advances *in on success. With
// borrow_dense (on a little-endian host) a dense body is checked in place and *out
// borrows it (SegmentData::borrowed) instead of copying it. Under kBounded, *largest rises
// to the bits of the largest magnitude the body carries (a coded body: its parameters), and
// *squares (when given) grows by the squares of the values a dense or sparse body carries
// (a coded body adds nothing).
absl::Status readSegmentBody(Encoding encoding, uint32_t segment_id, uint32_t numel,
                             uint32_t nonzeros, const uint8_t** in, const uint8_t* end,
                             ValueCheck check, bool borrow_dense, SegmentData* out,
                             PayloadChecksum* checksum, uint32_t* largest,
                             double* squares = nullptr);

}  // namespace wire
}  // namespace sparseps

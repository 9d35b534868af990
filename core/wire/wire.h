#pragma once
// The sparseps wire format: one message is a fixed-size header (core/wire/wire_header.h)
// followed by a payload of segments, each in the encoding that suits it
// (core/wire/wire_encoding.h). Pushes, replies and model broadcasts all carry a
// std::vector<SegmentData>; the encoder picks the smallest encoding per segment unless
// told otherwise, and the decoder trusts nothing a peer sends: every size is checked
// against the bytes present and the receiver's own layout before anything is allocated,
// and every failure is an absl::Status that says what was wrong.

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compressors/segment_data.h"
#include "compressors/segment_spec.h"
#include "core/wire/wire_checksum.h"
#include "core/wire/wire_encoding.h"
#include "core/wire/wire_header.h"

namespace sparseps {

struct EncodeOptions {
  std::optional<Encoding> forced;  // a sparse encoding for every sparse segment; dense ones stay dense
  bool allow_f16 = false;          // f16 values are lossy: the automatic choice uses them only if set

  EncodeOptions& force(Encoding encoding) {
    forced = encoding;
    return *this;
  }
  EncodeOptions& allowF16(bool allow) {
    allow_f16 = allow;
    return *this;
  }
  // Forcing kDeltaVarintF16 needs allow_f16 (lossy values are never sent unasked);
  // kDenseF32 cannot be forced (it would turn sparse segments dense).
  absl::Status validate() const;
};

// What a receiver accepts: its layout (numel per segment id) and its value policy; and
// whether its dense segments borrow their values from the payload.
struct DecodeLimits {
  static constexpr uint32_t kNoSegment = UINT32_MAX;  // this id is not accepted here
  std::vector<uint32_t> numel_by_id;  // index = segment id
  ValueCheck value_check = ValueCheck::kBounded;
  // Dense values are checked and hashed where they lie and the segment points at them
  // (SegmentData::borrowed) instead of holding a copy: a receive buffer that outlives its
  // decoded segments saves a copy of every dense body. Off, each is copied out.
  bool borrow_dense = false;

  // Accepts segment id with numel elements.
  DecodeLimits& allow(uint32_t id, uint32_t numel);
  DecodeLimits& values(ValueCheck check) {
    value_check = check;
    return *this;
  }
  DecodeLimits& borrowDense(bool borrow) {
    borrow_dense = borrow;
    return *this;
  }
  // Every spec of the layout; fails if a segment is too large for the wire's u32 numel.
  static absl::StatusOr<DecodeLimits> fromSpecs(const SegmentSpecs& specs);
};

// The whole message: header (with segment_count, payload_bytes and payload_checksum
// filled in) followed by the payload. Fails on invalid options or segments (sizes,
// index order and range) and on a forced f16 encoding of values beyond the half range.
// The checksum is taken while the payload is written (core/wire/wire_checksum.h).
absl::StatusOr<std::vector<uint8_t>> encodeMessage(const MessageHeader& header,
                                                   const std::vector<SegmentData>& segments,
                                                   const EncodeOptions& options = {});
// The same into *out, reusing its memory: a sender that keeps one buffer per stream of
// messages of a steady size allocates and page-faults nothing per message. *out is
// resized to the message; on failure its contents are unspecified.
absl::Status encodeMessage(const MessageHeader& header, const std::vector<SegmentData>& segments,
                           const EncodeOptions& options, std::vector<uint8_t>* out);

// Decodes a payload whose header was decoded already. Checks the size the header
// announced, then every segment: known id, distinct ids, numel matching the layout,
// counts within the bytes left, indices in range and strictly increasing, finite values
// (per policy), and no bytes left over; and the checksum, taken while the segments are
// read. A payload whose checksum does not match is reported as that (DataLoss), whatever
// else is wrong with it.
absl::StatusOr<std::vector<SegmentData>> decodePayload(const MessageHeader& header,
                                                       absl::Span<const uint8_t> payload,
                                                       const DecodeLimits& limits);
// The same into *out, reusing the memory of the segments it holds (a receiver that keeps
// one vector per stream of messages of the same layout allocates nothing per message).
// On failure *out is unspecified. With kBounded values, *largest (when given) is the
// largest magnitude the payload carries (of a coded segment: its parameters), and *squares
// (when given) the sum of the squares of the values its dense and sparse segments carry
// (coded segments add nothing), both found by the same scan that checks the values.
absl::Status decodePayload(const MessageHeader& header, absl::Span<const uint8_t> payload,
                           const DecodeLimits& limits, std::vector<SegmentData>* out,
                           float* largest = nullptr, double* squares = nullptr);

struct DecodedMessage {
  MessageHeader header;
  std::vector<SegmentData> segments;
};

// decodeHeader + decodePayload on a message in one buffer (exactly header + payload).
absl::StatusOr<DecodedMessage> decodeMessage(absl::Span<const uint8_t> message,
                                             const DecodeLimits& limits);

}  // namespace sparseps

#pragma once
// The fixed-size header of every sparseps message (versioned, little-endian). The
// transport receives exactly kHeaderBytes from any peer and asks payloadBytesFromHeader
// how many payload bytes to post a receive for (checked before any buffer is sized from
// the peer's numbers); the receiver then decodes the header once (decodeHeader) and the
// payload against it (decodePayload, core/wire/wire.h).
//
// Layout, byte offsets:
//   0 magic u32 "SPPS"    4 version u16      6 kind u16
//   8 sender rank u32    12 shard u32       16 worker step u64
//  24 model version u64  32 learning rate f32  36 flags u32
//  40 segment count u32  44 payload bytes u64  52 payload checksum u32   (56 bytes)
// The checksum is core/wire/wire_checksum.h's (XXH3-64 of the payload, low 32 bits).

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sparseps {

// The values are the wire's (1 and 5 were kinds no sender ever sent, and are refused).
enum class MessageKind : uint16_t {
  kPush = 2,
  kReply = 3,
  kModel = 4,
  kShutdown = 6,
};

const char* messageKindName(MessageKind kind);

inline constexpr uint32_t kWireMagic = 0x53505053u;  // "SPPS" read as a little-endian u32
// 2: the payload checksum became XXH3 (it was zlib's crc32).
// 3: a server's model message carries the receiving worker's own push count in worker_step
//    (it was the server's total), where a resumed worker goes on in its data.
inline constexpr uint16_t kWireVersion = 3;
inline constexpr size_t kHeaderBytes = 56;
// Bytes of one segment's own header in the payload: tag u8, id u32, numel u32, nonzeros u32.
inline constexpr size_t kSegmentHeaderBytes = 13;
// Default bound on a payload a receiver accepts (a 1 GiB message is far above any model here).
inline constexpr uint64_t kDefaultMaxPayloadBytes = uint64_t{1} << 30;

struct MessageHeader {
  MessageKind kind = MessageKind::kPush;
  uint32_t sender_rank = 0;
  uint32_t shard = 0;
  uint64_t worker_step = 0;
  uint64_t model_version = 0;  // the model version the sender has seen
  float learning_rate = 0.0f;
  uint32_t flags = 0;          // opaque to the wire format, for the protocol above it
  uint32_t segment_count = 0;  // filled by encodeMessage
  uint64_t payload_bytes = 0;  // filled by encodeMessage
  uint32_t payload_checksum = 0;  // payloadChecksum of the payload, filled by encodeMessage

  bool operator==(const MessageHeader& other) const;
};

std::array<uint8_t, kHeaderBytes> encodeHeader(const MessageHeader& header);

// Decodes the first kHeaderBytes of bytes (a whole message may follow). Rejects a short
// span, a wrong magic, an unknown version or kind, a non-finite learning rate and a
// segment count the announced payload cannot hold.
absl::StatusOr<MessageHeader> decodeHeader(absl::Span<const uint8_t> bytes);

// What the transport needs before it posts the payload receive: the payload size the
// header announces. Refuses bytes that are not a header of this protocol version (a short
// span, a wrong magic or version) and a size over max_payload_bytes; the other fields are
// left to decodeHeader.
absl::StatusOr<size_t> payloadBytesFromHeader(absl::Span<const uint8_t> header_bytes,
                                              uint64_t max_payload_bytes = kDefaultMaxPayloadBytes);

}  // namespace sparseps

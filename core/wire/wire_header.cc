#include "core/wire/wire_header.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/wire/wire_bytes.h"

namespace sparseps {

using wire::loadLe;
using wire::storeLe;

const char* messageKindName(MessageKind kind) {
  switch (kind) {
    case MessageKind::kPush: return "push";
    case MessageKind::kReply: return "reply";
    case MessageKind::kModel: return "model";
    case MessageKind::kShutdown: return "shutdown";
  }
  return "unknown";
}

bool MessageHeader::operator==(const MessageHeader& o) const {
  // learning_rate compared by value: the decoder rejects NaN, so == is exact here.
  return kind == o.kind && sender_rank == o.sender_rank && shard == o.shard &&
         worker_step == o.worker_step && model_version == o.model_version &&
         learning_rate == o.learning_rate && flags == o.flags &&
         segment_count == o.segment_count && payload_bytes == o.payload_bytes &&
         payload_checksum == o.payload_checksum;
}

std::array<uint8_t, kHeaderBytes> encodeHeader(const MessageHeader& h) {
  std::array<uint8_t, kHeaderBytes> out{};
  uint8_t* p = out.data();
  storeLe<uint32_t>(p + 0, kWireMagic);
  storeLe<uint16_t>(p + 4, kWireVersion);
  storeLe<uint16_t>(p + 6, static_cast<uint16_t>(h.kind));
  storeLe<uint32_t>(p + 8, h.sender_rank);
  storeLe<uint32_t>(p + 12, h.shard);
  storeLe<uint64_t>(p + 16, h.worker_step);
  storeLe<uint64_t>(p + 24, h.model_version);
  storeLe<float>(p + 32, h.learning_rate);
  storeLe<uint32_t>(p + 36, h.flags);
  storeLe<uint32_t>(p + 40, h.segment_count);
  storeLe<uint64_t>(p + 44, h.payload_bytes);
  storeLe<uint32_t>(p + 52, h.payload_checksum);
  return out;
}

namespace {

// The bytes are a header of this protocol version: what both the transport (before it
// trusts the announced size) and the decoder check first.
absl::Status checkFraming(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat("truncated header: ", bytes.size(),
                                                   " bytes, a header has ", kHeaderBytes));
  }
  const uint32_t magic = loadLe<uint32_t>(bytes.data() + 0);
  if (magic != kWireMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat("wrong magic 0x", absl::Hex(magic, absl::kZeroPad8), ", expected 0x",
                     absl::Hex(kWireMagic, absl::kZeroPad8), " (not a sparseps message)"));
  }
  const uint16_t version = loadLe<uint16_t>(bytes.data() + 4);
  if (version != kWireVersion) {
    return absl::InvalidArgumentError(absl::StrCat("unknown protocol version ", version,
                                                   ", this build speaks ", kWireVersion));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MessageHeader> decodeHeader(absl::Span<const uint8_t> bytes) {
  if (absl::Status framed = checkFraming(bytes); !framed.ok()) return framed;
  const uint8_t* p = bytes.data();
  const uint16_t kind = loadLe<uint16_t>(p + 6);
  switch (static_cast<MessageKind>(kind)) {
    case MessageKind::kPush:
    case MessageKind::kReply:
    case MessageKind::kModel:
    case MessageKind::kShutdown:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown message kind ", kind));
  }
  MessageHeader h;
  h.kind = static_cast<MessageKind>(kind);
  h.sender_rank = loadLe<uint32_t>(p + 8);
  h.shard = loadLe<uint32_t>(p + 12);
  h.worker_step = loadLe<uint64_t>(p + 16);
  h.model_version = loadLe<uint64_t>(p + 24);
  h.learning_rate = loadLe<float>(p + 32);
  h.flags = loadLe<uint32_t>(p + 36);
  h.segment_count = loadLe<uint32_t>(p + 40);
  h.payload_bytes = loadLe<uint64_t>(p + 44);
  h.payload_checksum = loadLe<uint32_t>(p + 52);
  if (!std::isfinite(h.learning_rate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("learning rate in the header is not finite (", h.learning_rate, ")"));
  }
  if (uint64_t{h.segment_count} * kSegmentHeaderBytes > h.payload_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "header announces ", h.segment_count, " segments but only ", h.payload_bytes,
        " payload bytes (each segment needs at least ", kSegmentHeaderBytes, ")"));
  }
  return h;
}

absl::StatusOr<size_t> payloadBytesFromHeader(absl::Span<const uint8_t> header_bytes,
                                              uint64_t max_payload_bytes) {
  if (absl::Status framed = checkFraming(header_bytes); !framed.ok()) return framed;
  const uint64_t payload_bytes = loadLe<uint64_t>(header_bytes.data() + 44);
  if (payload_bytes > max_payload_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "payload of ", payload_bytes, " bytes exceeds the limit of ", max_payload_bytes, " bytes"));
  }
  return static_cast<size_t>(payload_bytes);
}

}  // namespace sparseps

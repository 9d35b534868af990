#pragma once
// Framing: how the channel puts one protocol message on the wire and checks what arrives
// (the layout is channel_wire.h's). A message is the protocol's fixed-size header and a
// payload whose size the header announces; the transport reads that size through
// payload_size and knows nothing else of the protocol. Gloo terminates a process that
// receives more bytes than it posted, and does not say how many bytes a receive got, so a
// payload is received into a buffer of the protocol's maximum, with marks at its announced
// end that tell a payload shorter or longer than announced.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "transport/channel_wire.h"

namespace sparseps {

class Framing {
 public:
  using PayloadSize = std::function<absl::StatusOr<size_t>(absl::Span<const uint8_t> header)>;
  Framing(size_t header_bytes, PayloadSize payload_size, size_t max_payload_bytes);

  size_t headerMessageBytes() const { return channel_wire::headerMessageBytes(header_bytes_); }

  // A message to send, as its header and its payload. InvalidArgument, naming dst, when
  // the message is shorter than a header, or its header does not announce exactly its
  // payload, or the payload is over the limit.
  struct Outgoing {
    absl::Span<const uint8_t> header;
    absl::Span<const uint8_t> payload;
  };
  absl::StatusOr<Outgoing> split(int dst, absl::Span<const uint8_t> message) const;

  // A received header message's parts; header points into the message.
  struct Incoming {
    int64_t stamp = 0;
    absl::Span<const uint8_t> header;
    std::array<uint8_t, channel_wire::kTailBytes> tail{};
  };
  Incoming parse(absl::Span<const uint8_t> header_message) const;

  // The payload size a received header announces. The error says what its sender did
  // ("sent a bad header: ...", "announced a payload of ... bytes, more than the limit").
  absl::StatusOr<size_t> announced(absl::Span<const uint8_t> header) const;

  // Readies `buffer` (the protocol's maximum, at least) for the receive of `n` announced
  // bytes: its last announced bytes are set to differ from the tail the header message
  // carries (a payload that stops short leaves one of them so), and the bytes after them to
  // random ones (a longer payload overwrites them). checkPayload then says whether n bytes
  // came.
  struct Marks {
    size_t n = 0;
    std::array<uint8_t, channel_wire::kTailBytes> tail{};
    size_t tail_bytes = 0;
    std::array<uint8_t, channel_wire::kTailBytes> canary{};
    size_t canary_bytes = 0;
  };
  Marks markPayload(const Incoming& in, size_t n, absl::Span<uint8_t> buffer);
  // Empty when exactly marks.n bytes came; otherwise what the sender did.
  std::string checkPayload(const Marks& marks, absl::Span<const uint8_t> payload) const;

 private:
  const size_t header_bytes_;
  const PayloadSize payload_size_;
  const size_t max_payload_bytes_;
  std::mt19937_64 canary_rng_;  // the receiving thread's
};

}  // namespace sparseps

#pragma once
// Endpoint: all the runtime needs from the network — send one framed message (header +
// payload bytes, as core/wire/wire.h encodes it) to a rank, and receive the next one from any
// of a set of ranks. The Gloo channel of transport/ implements it for real jobs
// (core/net/channel_endpoint.h); the tests' LocalHub (tests/core/local_hub.h) implements it in
// memory, so the server and worker loops can be tested with ranks as threads, faults
// included.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sparseps {

struct Frame {
  int src = -1;
  // OK: header and payload hold one message from src. Not OK: src failed (died, or
  // violated the framing); the runtime drops it and goes on with the others.
  absl::Status peer_status;
  std::vector<uint8_t> header;
  std::vector<uint8_t> payload;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual int rank() const = 0;
  // message = header bytes followed by payload bytes.
  virtual absl::Status send(int dst, absl::Span<const uint8_t> message) = 0;
  // The next message (or failure) of any rank in ranks, into *frame, whose buffers are
  // reused (a loop that keeps one Frame allocates nothing per message of a steady size).
  // An error means the endpoint itself is broken.
  virtual absl::Status receive(absl::Span<const int> ranks, Frame* frame) = 0;
};

}  // namespace sparseps

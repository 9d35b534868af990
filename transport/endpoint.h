#pragma once
// Endpoint: all the runtime needs from the network. It sends one framed message (a
// fixed-size header, then the payload, in one buffer as core/wire/wire.h encodes it) to a
// rank, and receives the next message of any of a set of ranks as a Frame. A Frame either
// holds a message or says that its sender is gone, so a receiver drops that rank and goes
// on with the others. transport/'s Gloo Channel is the Endpoint of real jobs; the tests'
// LocalHub (tests/core/local_hub.h) is one in memory, so the server and worker loops can
// be tested with ranks as threads, faults included. No Gloo here.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace sparseps {

struct Frame {
  int src = -1;
  // OK: header and payload hold one message from src. Not OK: src is gone, and the status
  // says how: it closed its connection, died, or broke the framing (it announced too much,
  // or a header the protocol cannot read). Reported once per rank; later receives skip it.
  absl::Status peer_status;
  std::vector<uint8_t> header;
  std::vector<uint8_t> payload;  // exactly the size the header announced
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual int rank() const = 0;
  // message = header bytes followed by payload bytes. Blocks until dst has it.
  virtual absl::Status send(int dst, absl::Span<const uint8_t> message) = 0;
  // The next message (or departure) of any rank in ranks, into *frame, whose buffers are
  // reused: a loop that keeps one Frame allocates nothing per message of a steady size.
  // An error means the endpoint itself cannot go on (interrupted, shut down, no live rank
  // left among ranks); a peer's failure is a Frame, never an error.
  virtual absl::Status receive(absl::Span<const int> ranks, Frame* frame) = 0;
};

}  // namespace sparseps

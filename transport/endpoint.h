#pragma once
// Endpoint: all the runtime needs from the network. It sends one framed message (a
// fixed-size header, then the payload, in one buffer as core/wire/wire.h encodes it) to a
// rank, and receives the next message of any of a set of ranks as a Frame. A Frame either
// holds a message or says that its sender is gone, so a receiver drops that rank and goes
// on with the others. transport/'s Gloo Channel is the Endpoint of real jobs; the tests'
// LocalHub (tests/core/local_hub.h) is one in memory, so the server and worker loops can
// be tested with ranks as threads, faults included. No Gloo here.

#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace sparseps {

// An allocator whose resize leaves new bytes as they were: a receive buffer is grown to
// the protocol's maximum for every message, and zero-filling it each time would cost a
// pass over the largest message the job can send.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using FrameBytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

struct Frame {
  int src = -1;
  // OK: header and payload hold one message from src. Not OK: src is gone, and the status
  // says how: it closed its connection, died, broke the framing (it announced too much,
  // or a header the protocol cannot read) or stalled past the peer timeout. Reported once
  // per rank; later receives skip it.
  absl::Status peer_status;
  std::vector<uint8_t> header;
  FrameBytes payload;  // exactly the size the header announced
};

using Deadline = std::chrono::steady_clock::time_point;
inline constexpr Deadline kNoDeadline = Deadline::max();

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual int rank() const = 0;
  // message = header bytes followed by payload bytes. Blocks until dst has it (or dst is
  // dropped: a peer that takes nothing while idle past the peer timeout). Errors:
  // FailedPrecondition when dst has shut down in order (or this endpoint has), Unavailable
  // when dst is dead or dropped.
  virtual absl::Status send(int dst, absl::Span<const uint8_t> message) = 0;
  // The next message (or departure) of any rank in ranks, into *frame, whose buffers are
  // reused: a loop that keeps one Frame allocates nothing per message of a steady size.
  // DeadlineExceeded when nothing came by `until`. Any other error means the endpoint
  // itself cannot go on (interrupted, shut down, no live rank left among ranks); a peer's
  // failure is a Frame, never an error.
  virtual absl::Status receive(absl::Span<const int> ranks, Frame* frame, Deadline until) = 0;
  absl::Status receive(absl::Span<const int> ranks, Frame* frame) {
    return receive(ranks, frame, kNoDeadline);
  }
  // Stops hearing from `rank` and closes the connection to it, e.g. a worker that held a
  // round past the deadline. Its departure is not reported as a Frame: the caller knows.
  virtual void drop(int rank, const std::string& why) = 0;
};

}  // namespace sparseps

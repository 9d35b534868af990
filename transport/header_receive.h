#pragma once
// HeaderReceive: the channel's receive of header messages from ANY of a set of ranks. It
// stays posted between calls: a wait woken early (wake) leaves it posted for the next.
// Two Gloo facts shape it:
// - A failed pair keeps its error in every buffer posted on it (each later wait would
//   rethrow it, whichever ranks it listens to), so after a failure the receive moves to a
//   fresh buffer (renew). The old one lives as long as this object: the failed pair's I/O
//   thread may still hold it when our wait on it wakes.
// - When a rank it was posted on has left, that rank's pair may have taken the receive
//   with a message it never finished (a death mid-header, or a message longer than the
//   buffer: Gloo fails no receive it has begun reading), so it may never complete; or it
//   may still be waiting for any rank, and Gloo gives it the next header before a later
//   receive. So it is set aside (setAside): it keeps its memory, a thread waits on it, and
//   what it gets is taken before anything else (takeSetAside). The next receive is posted
//   on fresh memory.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/types/span.h"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace sparseps {

class HeaderReceive {
 public:
  // Receives messages of `bytes` bytes (a header message) over the context's pairs.
  HeaderReceive(gloo::Context* context, size_t bytes);
  ~HeaderReceive();  // stop()
  HeaderReceive(const HeaderReceive&) = delete;
  HeaderReceive& operator=(const HeaderReceive&) = delete;

  // The ranks the receive is posted on; empty when none is (the receiving thread's).
  const std::vector<int>& postedOn() const { return posted_; }

  // Posts the receive on `ranks` unless it is posted, and waits for it. True when a message
  // came: its sender in *src, its bytes in message(), and the receive is no longer posted.
  // False when woken (it stays posted). Throws when a pair failed under it: renew() then.
  bool wait(absl::Span<const int> ranks, int* src);
  // The message the last successful wait took.
  absl::Span<const uint8_t> message() const { return bytes_; }
  // Wakes a wait in progress, or the next one (any thread).
  void wake();
  // Moves the receive to a fresh buffer after a failed wait; returns the ranks it was
  // posted on.
  std::vector<int> renew();
  // Sets the posted receive aside, onto fresh memory for the next.
  void setAside();
  // A set-aside receive that completed, once: its sender and its bytes (which live as long
  // as this object). False when there is none.
  bool takeSetAside(int* src, absl::Span<const uint8_t>* bytes);
  // Stops the set-aside receives' threads (before the context's connections close).
  void stop();

 private:
  struct SetAside {
    std::vector<uint8_t> bytes;
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    std::thread waiter;
    int src = -1;  // the sender, once it completed (guarded by mu_)
    bool taken = false;
  };

  gloo::Context* const context_;
  std::vector<uint8_t> bytes_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer_;
  std::mutex buffer_mu_;  // guards buffer_ against its renewal, for wake's threads
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> given_up_;
  std::vector<int> posted_;
  std::mutex mu_;  // guards the set-aside receives' senders and stopping_
  bool stopping_ = false;
  std::vector<std::unique_ptr<SetAside>> set_aside_;  // the receiving thread's
};

}  // namespace sparseps

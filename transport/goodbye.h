#pragma once
// Goodbye: the orderly end of the link with one peer. Our bye, on the peer's control
// slot, says how many data messages we sent before it, and the peer acknowledges it once
// it has read all of them: Gloo completes a send once the bytes are in the kernel, so only
// the ack (sent after everything before the bye was read, TCP keeping order) makes it safe
// to close the connection. The peer's bye is acknowledged the same way (ackTheirs). Every
// wait is bounded: byes go to peers that may be gone.

#include <cstdint>
#include <memory>

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace sparseps {

class Goodbye {
 public:
  Goodbye(gloo::Context* context, int peer);
  ~Goodbye();
  Goodbye(const Goodbye&) = delete;
  Goodbye& operator=(const Goodbye&) = delete;

  // Readies our bye, which says `messages_sent`.
  void prepare(uint64_t messages_sent);
  // Posts the receive of the peer's ack and sends the bye (prepare first). Throws when the
  // context broke.
  void post();
  // Waits until the bye is sent and acknowledged, or the bound passes, or the peer is gone.
  void await();
  // Wakes await (the peer was dropped or its connection closed). The caller serializes it
  // with prepare.
  void abort();
  // Acknowledges the peer's bye, waiting at most the bound; a peer that closes without
  // waiting for the ack has what it needs.
  void ackTheirs();

 private:
  gloo::Context* const context_;
  const int peer_;
  uint64_t bye_word_ = 0;
  std::unique_ptr<gloo::transport::UnboundBuffer> bye_;
  uint64_t bye_ack_word_ = 0;
  std::unique_ptr<gloo::transport::UnboundBuffer> bye_ack_;
  uint64_t ack_word_ = 0;
  std::unique_ptr<gloo::transport::UnboundBuffer> ack_;  // ours of its bye
};

}  // namespace sparseps

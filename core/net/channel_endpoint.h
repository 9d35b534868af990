#pragma once
// ChannelEndpoint: the runtime's Endpoint over transport/'s Gloo Channel. It turns the
// channel's report of a dead, closed or misbehaving peer into a failed Frame naming that
// rank, so the server drops it and goes on.

#include <memory>
#include <set>

#include "core/runtime/endpoint.h"
#include "transport/channel.h"

namespace sparseps {

class ChannelEndpoint : public Endpoint {
 public:
  explicit ChannelEndpoint(Channel& channel) : channel_(channel) {}
  int rank() const override { return channel_.rank(); }
  absl::Status send(int dst, absl::Span<const uint8_t> message) override;
  absl::Status receive(absl::Span<const int> ranks, Frame* frame) override;

 private:
  Channel& channel_;
  ChannelMessage incoming_;  // its buffers and the frame's are swapped, so both are reused
  std::set<int> reported_;  // peers already handed up as failed
};

}  // namespace sparseps

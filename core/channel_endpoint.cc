#include "core/channel_endpoint.h"

#include "absl/strings/str_cat.h"
#include "core/wire_header.h"

namespace sparseps {

absl::Status ChannelEndpoint::send(int dst, absl::Span<const uint8_t> message) {
  if (message.size() < kHeaderBytes) {
    return absl::InvalidArgumentError("message shorter than a header");
  }
  return channel_.send(dst, message.subspan(0, kHeaderBytes), message.subspan(kHeaderBytes));
}

absl::StatusOr<Frame> ChannelEndpoint::receive(absl::Span<const int> ranks) {
  auto received = channel_.recvFromAny(ranks);
  if (received.ok()) {
    Frame frame;
    frame.src = received->src;
    if (received->kind == ChannelMessage::Kind::kShutdown) {
      // The peer closed its channel without the protocol's goodbye.
      frame.peer_status = absl::UnavailableError(
          absl::StrCat("rank ", received->src, " closed its connection"));
      reported_.insert(received->src);
      return frame;
    }
    frame.header = std::move(received->header);
    frame.payload = std::move(received->payload);
    return frame;
  }
  // The channel names a failed peer only in its message; find it by its state.
  for (int r : ranks) {
    if (!channel_.isLive(r) && reported_.insert(r).second) {
      Frame frame;
      frame.src = r;
      frame.peer_status = received.status();
      return frame;
    }
  }
  return received.status();
}

}  // namespace sparseps

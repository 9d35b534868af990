#include "core/net/channel_endpoint.h"

#include "absl/strings/str_cat.h"
#include "core/wire/wire_header.h"

namespace sparseps {

absl::Status ChannelEndpoint::send(int dst, absl::Span<const uint8_t> message) {
  if (message.size() < kHeaderBytes) {
    return absl::InvalidArgumentError("message shorter than a header");
  }
  return channel_.send(dst, message.subspan(0, kHeaderBytes), message.subspan(kHeaderBytes));
}

absl::Status ChannelEndpoint::receive(absl::Span<const int> ranks, Frame* frame) {
  const absl::Status received = channel_.recvFromAny(ranks, &incoming_);
  if (received.ok()) {
    frame->src = incoming_.src;
    if (incoming_.kind == ChannelMessage::Kind::kShutdown) {
      // The peer closed its channel without the protocol's goodbye.
      frame->peer_status = absl::UnavailableError(
          absl::StrCat("rank ", incoming_.src, " closed its connection"));
      reported_.insert(incoming_.src);
      return absl::OkStatus();
    }
    frame->peer_status = absl::OkStatus();
    frame->header.swap(incoming_.header);
    frame->payload.swap(incoming_.payload);
    return absl::OkStatus();
  }
  // The channel names a failed peer only in its message; find it by its state.
  for (int r : ranks) {
    if (!channel_.isLive(r) && reported_.insert(r).second) {
      frame->src = r;
      frame->peer_status = received;
      return absl::OkStatus();
    }
  }
  return received;
}

}  // namespace sparseps

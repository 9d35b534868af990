#include "core/net/connect.h"

#include <vector>

#include "core/wire/wire.h"

namespace sparseps {

size_t maxPayloadBytes(size_t numel, size_t segments, size_t buffers) {
  // maxEncodedBytes counts one segment's header and slack; the other segments add theirs.
  return maxEncodedBytes(numel) + (kSegmentHeaderBytes + kSegmentSlackBytes) * segments +
         maxEncodedBytes(buffers);
}

ChannelOptions wireChannelOptions(size_t max_payload_bytes, std::chrono::milliseconds peer_timeout) {
  ChannelOptions options;
  options.setHeaderBytes(kHeaderBytes)
      .setMaxPayloadBytes(max_payload_bytes)
      .setPeerTimeout(peer_timeout)
      .setPayloadSize([max_payload_bytes](absl::Span<const uint8_t> header) {
        return payloadBytesFromHeader(header, max_payload_bytes);
      });
  return options;
}

absl::StatusOr<std::unique_ptr<Channel>> connectRank(ConnectOptions options) {
  const auto& rv = options.rendezvous;
  auto context = options.store ? connectFullMesh(rv, *options.store) : connectWithFileStore(rv);
  if (!context.ok()) return context.status();

  ChannelOptions channel_options =
      wireChannelOptions(options.max_payload_bytes, options.peer_timeout);
  if (options.shaping) channel_options.setShaping(*options.shaping);
  auto channel = Channel::create(*context, std::move(channel_options));
  if (!channel.ok()) return channel.status();

  const bool is_server = rv.rank < options.num_servers;
  std::vector<int> peers;
  for (int r = 0; r < rv.world_size; ++r) {
    if ((r < options.num_servers) != is_server) peers.push_back(r);
  }
  Hello hello = options.hello;
  hello.protocol_version = kWireVersion;
  hello.world_size = static_cast<uint32_t>(rv.world_size);
  hello.num_server_shards = static_cast<uint32_t>(options.num_servers);
  if (auto s = handshake(**channel, hello, is_server, peers); !s.ok()) {
    (*channel)->shutdown();
    return s;
  }
  return channel;
}

}  // namespace sparseps

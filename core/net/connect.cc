#include "core/net/connect.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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
  RendezvousOptions rv = options.rendezvous;
  const bool is_server = rv.rank < options.num_servers;
  std::vector<int> peers;
  for (int r = 0; r < rv.world_size; ++r) {
    if ((r < options.num_servers) != is_server) peers.push_back(r);
  }
  // A shard starts with the workers that came; a worker needs every shard.
  rv.setPeers(peers, /*missing_allowed=*/is_server);
  absl::StatusOr<Mesh> mesh = connectPeers(rv, options.store);
  if (!mesh.ok()) return mesh.status();

  ChannelOptions channel_options =
      wireChannelOptions(options.max_payload_bytes, options.peer_timeout);
  if (options.shaping) channel_options.setShaping(*options.shaping);
  auto channel = Channel::create(mesh->context, std::move(channel_options), mesh->missing);
  if (!channel.ok()) return channel.status();

  Hello hello = options.hello;
  hello.protocol_version = kWireVersion;
  hello.world_size = static_cast<uint32_t>(rv.world_size);
  hello.num_server_shards = static_cast<uint32_t>(options.num_servers);
  // A peer answers once it has connected to all of its own peers, after waiting out any
  // that did not come: a shard for its workers, a worker for the other shards.
  const std::chrono::milliseconds bound = rv.connect_timeout + options.peer_timeout;
  auto checked = handshake(**channel, hello, is_server, peers, bound);
  if (!checked.ok()) {
    (*channel)->shutdown();
    return checked.status();
  }
  std::vector<std::string> refused;
  for (size_t i = 0; i < peers.size(); ++i) {
    const absl::Status& s = (*checked)[i];
    if (s.ok()) continue;
    if (!is_server) {
      (*channel)->shutdown();
      return s;
    }
    // The shard's loop names it when its initial model cannot be sent.
    (*channel)->drop(peers[i], absl::StrCat("was refused at the handshake: ", s.message()));
    refused.push_back(absl::StrCat("rank ", peers[i], ": ", s.message()));
  }
  if (!refused.empty() && refused.size() == peers.size()) {
    (*channel)->shutdown();
    return absl::FailedPreconditionError(
        absl::StrCat("server shard ", rv.rank, ": no worker joined the job; ",
                     absl::StrJoin(refused, "; ")));
  }
  return channel;
}

}  // namespace sparseps

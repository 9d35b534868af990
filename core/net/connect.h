#pragma once
// connectRank: from rendezvous to a ready Channel, the rank's Endpoint. Connects a worker
// to every server shard and a shard to every worker (through a FileStore on one machine or
// the given store across machines), opens the framed channel with the wire header's size
// check and optional link shaping, and runs the handshake (run secret, protocol, layout
// fingerprint, method, world) with the other side. A worker fails without every shard. A
// shard starts with the workers that joined within the connect timeout and passed the
// handshake: the others are dead to its channel, with the reason, and its loop drops them
// (its initial model cannot be sent); with none left it fails naming each.

#include <chrono>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "transport/channel.h"
#include "transport/handshake.h"
#include "transport/link_shaping.h"
#include "transport/rendezvous.h"

namespace sparseps {

struct ConnectOptions {
  RendezvousOptions rendezvous;
  KeyValueStore* store = nullptr;            // null: FileStore in rendezvous.store_dir
  int num_servers = 1;
  Hello hello;                               // world_size, shards and version filled in
  std::optional<ShapingOptions> shaping;
  size_t max_payload_bytes = 0;              // see maxPayloadBytes
  std::chrono::milliseconds peer_timeout = std::chrono::seconds(30);  // ChannelOptions
};

// The largest payload a peer may send for a model of `numel` parameters in `segments`
// segments plus `buffers` BN floats, whatever encodings the peer picks (wire.h).
size_t maxPayloadBytes(size_t numel, size_t segments, size_t buffers);

// Channel options for the wire format: its header size, the payload size a header
// announces, at most max_payload_bytes.
ChannelOptions wireChannelOptions(size_t max_payload_bytes, std::chrono::milliseconds peer_timeout);

// The channel holds the Gloo mesh it runs on; shutdown() says goodbye to the peers.
absl::StatusOr<std::unique_ptr<Channel>> connectRank(ConnectOptions options);

}  // namespace sparseps

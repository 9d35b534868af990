#pragma once
// Handshake: right after connecting, every worker and every server shard exchange a
// Hello and check that they run the same protocol on the same model layout with the same
// method and world. A mismatch is an error on both sides that names the field and both
// values, e.g. "handshake: layout fingerprint mismatch: server 0 0x1f worker 3 0x2e".
// The Hello travels as kHelloBytes fixed bytes: a receive is never smaller than what a
// peer sends, so this size never changes; new fields go into the reserved tail and bump
// the version.

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sparseps {

class Channel;

inline constexpr size_t kHelloBytes = 128;
inline constexpr size_t kHelloMaxName = 40;  // bytes of method and mode, each

struct Hello {
  uint32_t protocol_version = 0;
  uint64_t layout_fingerprint = 0;
  std::string method;  // at most kHelloMaxName bytes
  uint32_t world_size = 0;
  uint32_t num_server_shards = 0;
  std::string mode;  // at most kHelloMaxName bytes
};

absl::StatusOr<std::array<uint8_t, kHelloBytes>> encodeHello(const Hello& hello);
absl::StatusOr<Hello> decodeHello(absl::Span<const uint8_t> bytes);

// OK when the two agree; otherwise names the first differing field with both values.
absl::Status compareHello(const Hello& server, int server_rank, const Hello& worker,
                          int worker_rank);

// Exchanges Hellos with `peers` (a worker: the server shards; a server shard: the
// workers) and compares each pair. is_server says which side `mine` is.
absl::Status handshake(Channel& channel, const Hello& mine, bool is_server,
                       absl::Span<const int> peers);

}  // namespace sparseps

#pragma once
// Handshake: right after connecting, every worker and every server shard exchange a
// Hello and check that they run the same protocol on the same model layout with the same
// method and world. A mismatch is an error on both sides that names the field and both
// values, e.g. "handshake: layout fingerprint mismatch: server 0 0x1f worker 3 0x2e".
// The Hello travels as kHelloBytes fixed bytes: a receive is never smaller than what a
// peer sends, so this size never changes; new fields go into the reserved tail and bump
// the version.
//
// The run secret: each rank sends a tag, HMAC-SHA256(secret, "sparseps hello" + its own
// rank) cut to 16 bytes, never the secret itself; the receiver recomputes it for the
// sender's rank. A rank that does not know the secret cannot make a tag for itself, and
// a tag it received names another rank, so it cannot replay one either. Checked before
// any other field: a rank without the secret is refused whatever else it claims.

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sparseps {

class Channel;

inline constexpr size_t kHelloBytes = 128;
inline constexpr size_t kHelloMaxName = 40;  // bytes of method and mode, each
inline constexpr size_t kSecretTagBytes = 16;
using SecretTag = std::array<uint8_t, kSecretTagBytes>;

struct Hello {
  uint32_t protocol_version = 0;
  uint64_t layout_fingerprint = 0;
  std::string method;  // at most kHelloMaxName bytes
  uint32_t world_size = 0;
  uint32_t num_server_shards = 0;
  std::string mode;  // at most kHelloMaxName bytes
  std::string run_secret;  // sent as the tag of (secret, sender rank); empty: none
  SecretTag secret_tag{};  // what decodeHello read; all zero when the sender has none
};

// The tag a rank sends for `secret` (all zero for an empty secret).
SecretTag secretTag(const std::string& secret, int sender_rank);

absl::StatusOr<std::array<uint8_t, kHelloBytes>> encodeHello(const Hello& hello, int sender_rank);
absl::StatusOr<Hello> decodeHello(absl::Span<const uint8_t> bytes);

// OK when the two agree; otherwise names the first differing field with both values.
absl::Status compareHello(const Hello& server, int server_rank, const Hello& worker,
                          int worker_rank);

// Exchanges Hellos with `peers` (a worker: the server shards; a server shard: the
// workers) and compares each pair. is_server says which side `mine` is. One status per
// peer, in the order of `peers`: OK, or why it is refused (it is missing or did not answer
// within `bound`, its Hello does not decode, it lacks the run secret, a field differs).
// InvalidArgument for a peer outside the world.
absl::StatusOr<std::vector<absl::Status>> handshake(Channel& channel, const Hello& mine,
                                                    bool is_server, absl::Span<const int> peers,
                                                    std::chrono::milliseconds bound);

}  // namespace sparseps

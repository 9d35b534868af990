#include "transport/handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "transport/channel.h"

namespace sparseps {
namespace {

// Layout (little-endian host order; all ranks of a job share one architecture):
//   0 magic "SPSHELLO" | 8 u32 version | 12 u32 world size | 16 u32 server shards |
//   20 u32 reserved | 24 u64 layout fingerprint | 32 method[40] | 72 mode[40] |
//   112 secret tag[16]
constexpr char kMagic[8] = {'S', 'P', 'S', 'H', 'E', 'L', 'L', 'O'};
constexpr size_t kMethodAt = 32;
constexpr size_t kModeAt = kMethodAt + kHelloMaxName;
constexpr size_t kTagAt = kModeAt + kHelloMaxName;
static_assert(kTagAt + kSecretTagBytes == kHelloBytes);

template <typename T>
void put(uint8_t* at, T v) {
  std::memcpy(at, &v, sizeof(T));
}
template <typename T>
T get(const uint8_t* at) {
  T v;
  std::memcpy(&v, at, sizeof(T));
  return v;
}

std::string getName(const uint8_t* at) {
  const char* s = reinterpret_cast<const char*>(at);
  return std::string(s, strnlen(s, kHelloMaxName));
}

absl::Status mismatch(const char* field, int server_rank, const std::string& server,
                      int worker_rank, const std::string& worker) {
  return absl::FailedPreconditionError(absl::StrCat("handshake: ", field, " mismatch: server ",
                                                    server_rank, " ", server, " worker ",
                                                    worker_rank, " ", worker));
}

}  // namespace

SecretTag secretTag(const std::string& secret, int sender_rank) {
  SecretTag tag{};
  if (secret.empty()) return tag;
  constexpr absl::string_view kLabel = "sparseps hello";
  uint8_t message[kLabel.size() + sizeof(uint32_t)];
  std::memcpy(message, kLabel.data(), kLabel.size());
  put<uint32_t>(message + kLabel.size(), static_cast<uint32_t>(sender_rank));
  uint8_t digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), message, sizeof(message),
       digest, &length);
  std::memcpy(tag.data(), digest, tag.size());
  return tag;
}

absl::StatusOr<std::array<uint8_t, kHelloBytes>> encodeHello(const Hello& hello, int sender_rank) {
  if (hello.method.size() > kHelloMaxName || hello.mode.size() > kHelloMaxName) {
    return absl::InvalidArgumentError(
        absl::StrCat("handshake: method and mode names must be at most ", kHelloMaxName, " bytes"));
  }
  std::array<uint8_t, kHelloBytes> out{};
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  put<uint32_t>(&out[8], hello.protocol_version);
  put<uint32_t>(&out[12], hello.world_size);
  put<uint32_t>(&out[16], hello.num_server_shards);
  put<uint64_t>(&out[24], hello.layout_fingerprint);
  std::memcpy(&out[kMethodAt], hello.method.data(), hello.method.size());
  std::memcpy(&out[kModeAt], hello.mode.data(), hello.mode.size());
  const SecretTag tag = secretTag(hello.run_secret, sender_rank);
  std::memcpy(&out[kTagAt], tag.data(), tag.size());
  return out;
}

absl::StatusOr<Hello> decodeHello(absl::Span<const uint8_t> bytes) {
  if (bytes.size() != kHelloBytes || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError("handshake: the peer did not send a sparseps Hello");
  }
  Hello hello;
  hello.protocol_version = get<uint32_t>(&bytes[8]);
  hello.world_size = get<uint32_t>(&bytes[12]);
  hello.num_server_shards = get<uint32_t>(&bytes[16]);
  hello.layout_fingerprint = get<uint64_t>(&bytes[24]);
  hello.method = getName(&bytes[kMethodAt]);
  hello.mode = getName(&bytes[kModeAt]);
  std::memcpy(hello.secret_tag.data(), &bytes[kTagAt], kSecretTagBytes);
  return hello;
}

absl::Status compareHello(const Hello& server, int server_rank, const Hello& worker,
                          int worker_rank) {
  auto hex = [](uint64_t v) { return absl::StrFormat("0x%016x", v); };
  if (server.protocol_version != worker.protocol_version) {
    return mismatch("protocol version", server_rank, absl::StrCat(server.protocol_version),
                    worker_rank, absl::StrCat(worker.protocol_version));
  }
  if (server.layout_fingerprint != worker.layout_fingerprint) {
    return mismatch("layout fingerprint", server_rank, hex(server.layout_fingerprint), worker_rank,
                    hex(worker.layout_fingerprint));
  }
  if (server.method != worker.method) {
    return mismatch("method", server_rank, absl::StrCat("\"", server.method, "\""), worker_rank,
                    absl::StrCat("\"", worker.method, "\""));
  }
  if (server.world_size != worker.world_size) {
    return mismatch("world size", server_rank, absl::StrCat(server.world_size), worker_rank,
                    absl::StrCat(worker.world_size));
  }
  if (server.num_server_shards != worker.num_server_shards) {
    return mismatch("server shards", server_rank, absl::StrCat(server.num_server_shards),
                    worker_rank, absl::StrCat(worker.num_server_shards));
  }
  if (server.mode != worker.mode) {
    return mismatch("mode", server_rank, absl::StrCat("\"", server.mode, "\""), worker_rank,
                    absl::StrCat("\"", worker.mode, "\""));
  }
  return absl::OkStatus();
}

namespace {

absl::Status checkPeer(const Hello& mine, int my_rank, bool is_server, int peer_rank,
                       absl::Span<const uint8_t> bytes) {
  absl::StatusOr<Hello> peer = decodeHello(bytes);
  if (!peer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(peer.status().message(), " (rank ", peer_rank, ")"));
  }
  const SecretTag expected = secretTag(mine.run_secret, peer_rank);
  if (CRYPTO_memcmp(expected.data(), peer->secret_tag.data(), kSecretTagBytes) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "handshake: rank ", peer_rank, " did not present this run's secret; it is refused. "
        "Every rank of a job needs the same SPARSEPS_RUN_SECRET (experiments/run sets one "
        "for the ranks it starts; on several machines export the same value on each)"));
  }
  return is_server ? compareHello(mine, my_rank, *peer, peer_rank)
                   : compareHello(*peer, peer_rank, mine, my_rank);
}

}  // namespace

absl::StatusOr<std::vector<absl::Status>> handshake(Channel& channel, const Hello& mine,
                                                    bool is_server, absl::Span<const int> peers,
                                                    std::chrono::milliseconds bound) {
  absl::StatusOr<std::array<uint8_t, kHelloBytes>> encoded = encodeHello(mine, channel.rank());
  if (!encoded.ok()) return encoded.status();
  auto theirs = channel.exchange(peers, *encoded, bound);
  if (!theirs.ok()) return theirs.status();
  std::vector<absl::Status> out;
  for (size_t i = 0; i < peers.size(); ++i) {
    const auto& blob = (*theirs)[i];
    out.push_back(blob.ok() ? checkPeer(mine, channel.rank(), is_server, peers[i], *blob)
                            : blob.status());
  }
  return out;
}

}  // namespace sparseps

#pragma once
// Rendezvous: connects the ranks of one job with Gloo TCP pairs: each rank to the peers it
// names (a parameter server's workers to its shards and back), or a full mesh. A peer that
// does not join in time is left out and named, so a job can start without it.
// The store is a FileStore in a directory on one machine, or any KeyValueStore across
// machines (the TCP store hosted by rank 0, core/torch/tcp_store.h, which comes from LibTorch).
// Every run has its own key prefix (run_id), so stale keys of an earlier job never
// connect this one to dead peers. The address to bind is always explicit: Debian maps the
// hostname to 127.0.1.1, so "127.0.0.1" or an interface name is given.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace sparseps {

struct RendezvousOptions {
  int rank = -1;
  int world_size = 0;
  std::string run_id;       // key prefix of this run; required
  std::string store_dir;    // FileStore directory (one machine)
  std::string master_addr;  // TCP store host (rank 0 hosts it)
  int master_port = 29500;
  // Rank 0 hosts the TCP store; false where the launcher already runs one at
  // master_addr:master_port (torchrun's static rendezvous: TORCHELASTIC_USE_AGENT_STORE).
  bool host_store = true;
  std::string hostname = "127.0.0.1";  // address to bind; or set iface instead
  std::string iface;                   // network interface name, e.g. "eth0"
  std::chrono::milliseconds connect_timeout = std::chrono::minutes(2);
  // The ranks to connect to; empty: every other rank (a full mesh). Two ranks connect only
  // when each names the other.
  std::vector<int> peers;
  // Whether the connect goes on without a peer that did not join within the timeout (or
  // whose connection failed): Mesh::missing names it. Otherwise that is an error.
  bool allow_missing = false;

  RendezvousOptions& setRank(int v) {
    rank = v;
    return *this;
  }
  RendezvousOptions& setWorldSize(int v) {
    world_size = v;
    return *this;
  }
  RendezvousOptions& setRunId(std::string v) {
    run_id = std::move(v);
    return *this;
  }
  RendezvousOptions& setStoreDir(std::string v) {
    store_dir = std::move(v);
    return *this;
  }
  RendezvousOptions& setMaster(std::string addr, int port) {
    master_addr = std::move(addr);
    master_port = port;
    return *this;
  }
  RendezvousOptions& setHostname(std::string v) {
    hostname = std::move(v);
    iface.clear();
    return *this;
  }
  RendezvousOptions& setIface(std::string v) {
    iface = std::move(v);
    hostname.clear();
    return *this;
  }
  RendezvousOptions& setConnectTimeout(std::chrono::milliseconds v) {
    connect_timeout = v;
    return *this;
  }
  RendezvousOptions& setPeers(std::vector<int> v, bool missing_allowed) {
    peers = std::move(v);
    allow_missing = missing_allowed;
    return *this;
  }

  // Names the first bad field.
  absl::Status validate() const;
};

// What the rendezvous needs from a store shared by the ranks, in plain bytes, so that a
// store from outside transport/ needs no Gloo header. A failure throws (Gloo's own
// stores do the same; the connect turns it into a Status).
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  // Whether every key is set, at once.
  virtual bool check(const std::vector<std::string>& keys) = 0;
};

// A rank's connections: a Gloo context with a pair to each peer that joined, and why each
// peer asked for has none ("did not join within 120 s", a failed connection).
struct Mesh {
  std::shared_ptr<gloo::Context> context;
  std::map<int, std::string> missing;
};

// Connects this rank to options.peers through `store` (a FileStore in options.store_dir
// when null), keys under options.run_id, each peer on a thread of its own. Every peer gets
// the whole connect timeout to join; one that published its address and then died can
// hold the connect for up to twice it. Gloo exceptions come back as a Status.
absl::StatusOr<Mesh> connectPeers(const RendezvousOptions& options, KeyValueStore* store);

// A full mesh (options.peers and allow_missing ignored): every rank must join.
absl::StatusOr<std::shared_ptr<gloo::Context>> connectFullMesh(const RendezvousOptions& options,
                                                               KeyValueStore& store);

// connectFullMesh over a FileStore in options.store_dir (created if missing).
absl::StatusOr<std::shared_ptr<gloo::Context>> connectWithFileStore(
    const RendezvousOptions& options);

}  // namespace sparseps

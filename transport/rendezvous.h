#pragma once
// Rendezvous: connects the ranks of one job into a full mesh of Gloo TCP pairs.
// The store is a FileStore in a directory on one machine, or any KeyValueStore across
// machines (the TCP store hosted by rank 0, core/torch/tcp_store.h, which comes from LibTorch).
// Every run has its own key prefix (run_id), so stale keys of an earlier job never
// connect this one to dead peers. The address to bind is always explicit: Debian maps the
// hostname to 127.0.1.1, so "127.0.0.1" or an interface name is given.

#include <chrono>
#include <cstdint>
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

  // Names the first bad field.
  absl::Status validate() const;
};

// Fills rank, world_size, master_addr and master_port from RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT where they are set, on top of `base`. Only the launcher
// calls this; nothing else in the library reads the environment.
absl::StatusOr<RendezvousOptions> rendezvousOptionsFromEnv(RendezvousOptions base);

// What the rendezvous needs from a store shared by the ranks, in plain bytes, so that a
// store from outside transport/ needs no Gloo header. A failure throws (Gloo's own
// stores do the same; connectFullMesh turns it into a Status).
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  // Returns once every key is set; throws after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

// Connects all ranks through `store` (keys under options.run_id). Gloo exceptions come
// back as a Status.
absl::StatusOr<std::shared_ptr<gloo::Context>> connectFullMesh(const RendezvousOptions& options,
                                                               KeyValueStore& store);

// connectFullMesh over a FileStore in options.store_dir (created if missing).
absl::StatusOr<std::shared_ptr<gloo::Context>> connectWithFileStore(
    const RendezvousOptions& options);

}  // namespace sparseps

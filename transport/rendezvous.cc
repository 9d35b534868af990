#include "transport/rendezvous.h"

#include <gloo/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "transport/gloo_pair_guard.h"

namespace sparseps {
namespace {

// Gloo writes to its sockets without MSG_NOSIGNAL: a write to a peer that has just closed
// would kill this process with SIGPIPE instead of raising the IoException we turn into
// a Status. Ignore SIGPIPE unless the program installed its own handler.
void ignoreSigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
}

}  // namespace

absl::Status RendezvousOptions::validate() const {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous: world_size must be >= 1, got ", world_size));
  }
  if (rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous: rank must be in [0, ", world_size, "), got ", rank));
  }
  if (run_id.empty()) {
    return absl::InvalidArgumentError(
        "rendezvous: run_id is empty; every run needs its own key prefix");
  }
  if (hostname.empty() == iface.empty()) {
    return absl::InvalidArgumentError(
        "rendezvous: give exactly one of hostname (e.g. 127.0.0.1) and iface");
  }
  if (master_port < 0 || master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous: master_port must be in [0, 65535], got ", master_port));
  }
  if (connect_timeout.count() <= 0) {
    return absl::InvalidArgumentError("rendezvous: connect_timeout must be positive");
  }
  for (int peer : peers) {
    if (peer < 0 || peer >= world_size || peer == rank) {
      return absl::InvalidArgumentError(absl::StrCat("rendezvous: peer ", peer, " of rank ", rank,
                                                     " is not another rank of the world of ",
                                                     world_size));
    }
  }
  return absl::OkStatus();
}

namespace {

// The store polls for a peer's address this often; one that is there is taken at once.
constexpr std::chrono::milliseconds kPoll(20);

// A KeyValueStore over Gloo's FileStore: the same operations, uint8_t vs char bytes.
class FileKeyValueStore final : public KeyValueStore {
 public:
  explicit FileKeyValueStore(const std::string& dir) : store_(dir) {}
  bool check(const std::vector<std::string>& keys) override { return store_.check(keys); }
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    store_.set(key, std::vector<char>(value.begin(), value.end()));
  }
  std::vector<uint8_t> get(const std::string& key) override {
    std::vector<char> value = store_.get(key);
    return std::vector<uint8_t>(value.begin(), value.end());
  }

 private:
  // Gloo's check is protected (its wait checks a timeout in whole seconds).
  struct Files final : gloo::rendezvous::FileStore {
    using FileStore::check;
    using FileStore::FileStore;
  };
  Files store_;
};

// A gloo::Context over pairs made here: Gloo's own rendezvous connects every rank or fails.
class PeerContext final : public gloo::Context {
 public:
  PeerContext(int rank, int size, std::shared_ptr<gloo::transport::Device> device,
              std::shared_ptr<gloo::transport::Context> pairs)
      : gloo::Context(rank, size) {
    device_ = std::move(device);
    transportContext_ = std::move(pairs);
  }
};

std::string keyOf(const RendezvousOptions& options, int rank) {
  return absl::StrCat(options.run_id, "/", rank);
}

// Connects the pair to `peer` from the addresses it published (one per rank, `width`
// bytes each, zeros where it has no pair); the reason it cannot, or "" (the caller drops
// the pair of every peer that has a reason).
std::string connectPair(gloo::transport::Context& pairs, int rank, int peer,
                        const std::vector<uint8_t>& published, size_t width) {
  if (width == 0 || published.size() != width * static_cast<size_t>(pairs.size)) {
    return absl::StrCat("published ", published.size(), " address bytes, not ", pairs.size,
                        " addresses of ", width, " (another build of sparseps?)");
  }
  const auto first = published.begin() + static_cast<ptrdiff_t>(width * rank);
  std::vector<char> address(first, first + static_cast<ptrdiff_t>(width));
  if (std::all_of(address.begin(), address.end(), [](char c) { return c == 0; })) {
    return "does not connect to this rank (it names other peers)";
  }
  try {
    pairs.getPair(peer)->connect(address);
  } catch (const std::exception& e) {
    return absl::StrCat("published its address but did not connect: ", e.what());
  }
  return "";
}

absl::StatusOr<Mesh> connectOver(const RendezvousOptions& options, KeyValueStore& store) {
  if (absl::Status s = options.validate(); !s.ok()) return s;
  ignoreSigpipe();
  std::vector<int> peers = options.peers;
  if (peers.empty()) {
    for (int r = 0; r < options.world_size; ++r) {
      if (r != options.rank) peers.push_back(r);
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options.connect_timeout;
  auto failed = [&](const std::string& why) {
    return absl::UnavailableError(absl::StrCat("rendezvous: rank ", options.rank, " of ",
                                               options.world_size, " (run ", options.run_id,
                                               ") could not connect: ", why));
  };
  if (absl::Status guarded = guardGlooPairs(); !guarded.ok()) return failed(std::string(guarded.message()));
  Mesh mesh;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    attr.iface = options.iface;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    std::shared_ptr<gloo::transport::Context> pairs =
        device->createContext(options.rank, options.world_size);
    pairs->setTimeout(options.connect_timeout);
    std::vector<uint8_t> mine;
    size_t width = 0;
    for (int peer : peers) {
      const std::vector<char> address = pairs->createPair(peer)->address().bytes();
      width = address.size();
      mine.resize(width * static_cast<size_t>(options.world_size), 0);
      std::copy(address.begin(), address.end(), mine.begin() + static_cast<ptrdiff_t>(width * peer));
    }
    store.set(keyOf(options, options.rank), mine);
    // Each peer on a thread of its own, connected as soon as its address is there: one that
    // never comes, or comes and dies (the listening side of a Gloo pair waits for its
    // peer), holds up no other.
    std::mutex store_mu;  // a store need not take calls from several threads
    std::vector<std::string> why(peers.size());
    const double seconds = std::chrono::duration<double>(options.connect_timeout).count();
    auto join = [&](size_t i) {
      const std::string key = keyOf(options, peers[i]);
      try {
        for (;;) {
          std::vector<uint8_t> theirs;
          {
            std::lock_guard<std::mutex> lock(store_mu);
            if (store.check({key})) theirs = store.get(key);
          }
          if (!theirs.empty()) {
            why[i] = connectPair(*pairs, options.rank, peers[i], theirs, width);
            return;
          }
          if (std::chrono::steady_clock::now() >= deadline) {
            why[i] = absl::StrCat("did not join within the connect timeout (", seconds, " s)");
            return;
          }
          std::this_thread::sleep_for(kPoll);
        }
      } catch (const std::exception& e) {
        why[i] = absl::StrCat("could not be looked up in the store: ", e.what());
      }
    };
    std::vector<std::thread> joiners;
    for (size_t i = 0; i < peers.size(); ++i) joiners.emplace_back(join, i);
    for (std::thread& t : joiners) t.join();
    for (size_t i = 0; i < peers.size(); ++i) {
      if (!why[i].empty()) mesh.missing[peers[i]] = why[i];
    }
    for (const auto& [peer, why] : mesh.missing) pairs->getPair(peer).reset();
    mesh.context = std::make_shared<PeerContext>(options.rank, options.world_size,
                                                 std::move(device), std::move(pairs));
    mesh.context->setTimeout(options.connect_timeout);
  } catch (const std::exception& e) {
    return failed(e.what());
  }
  if (!mesh.missing.empty() && !options.allow_missing) {
    const auto& [peer, why] = *mesh.missing.begin();
    return failed(absl::StrCat("rank ", peer, " ", why));
  }
  return mesh;
}

}  // namespace

absl::StatusOr<Mesh> connectPeers(const RendezvousOptions& options, KeyValueStore* store) {
  if (store != nullptr) return connectOver(options, *store);
  if (options.store_dir.empty()) {
    return absl::InvalidArgumentError("rendezvous: store_dir is empty");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.store_dir, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("rendezvous: cannot create store_dir ",
                                               options.store_dir, ": ", ec.message()));
  }
  FileKeyValueStore files(options.store_dir);
  return connectOver(options, files);
}

namespace {

RendezvousOptions fullMesh(RendezvousOptions options) {
  options.peers.clear();
  options.allow_missing = false;
  return options;
}

}  // namespace

absl::StatusOr<std::shared_ptr<gloo::Context>> connectFullMesh(const RendezvousOptions& options,
                                                               KeyValueStore& store) {
  absl::StatusOr<Mesh> mesh = connectPeers(fullMesh(options), &store);
  if (!mesh.ok()) return mesh.status();
  return mesh->context;
}

absl::StatusOr<std::shared_ptr<gloo::Context>> connectWithFileStore(
    const RendezvousOptions& options) {
  absl::StatusOr<Mesh> mesh = connectPeers(fullMesh(options), nullptr);
  if (!mesh.ok()) return mesh.status();
  return mesh->context;
}

}  // namespace sparseps

#include "transport/tcp_store.h"

#include <gloo/rendezvous/store.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

// Gloo's Store over c10d's: same operations, char vs uint8_t bytes.
class TcpStoreAdapter final : public gloo::rendezvous::Store {
 public:
  explicit TcpStoreAdapter(std::unique_ptr<c10d::TCPStore> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<uint8_t> value = store_->get(key);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  std::unique_ptr<c10d::TCPStore> store_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<gloo::rendezvous::Store>> makeTcpStore(
    const RendezvousOptions& options) {
  if (absl::Status s = options.validate(); !s.ok()) return s;
  if (options.master_addr.empty()) {
    return absl::InvalidArgumentError("rendezvous: master_addr is empty (set MASTER_ADDR)");
  }
  try {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<uint16_t>(options.master_port);
    opts.isServer = options.rank == 0 && options.host_store;
    opts.numWorkers = options.world_size;
    opts.waitWorkers = false;
    opts.timeout = options.connect_timeout;
    return std::shared_ptr<gloo::rendezvous::Store>(
        std::make_shared<TcpStoreAdapter>(std::make_unique<c10d::TCPStore>(options.master_addr, opts)));
  } catch (const c10::Error& e) {  // without the C++ backtrace LibTorch appends
    return absl::UnavailableError(absl::StrCat("rendezvous: TCP store at ", options.master_addr,
                                               ":", options.master_port, " (rank ", options.rank,
                                               "): ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("rendezvous: TCP store at ", options.master_addr,
                                               ":", options.master_port, " (rank ", options.rank,
                                               "): ", e.what()));
  }
}

}  // namespace sparseps

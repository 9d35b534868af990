#include "core/torch/tcp_store.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

// transport/'s KeyValueStore over c10d's store.
class TcpKeyValueStore final : public KeyValueStore {
 public:
  explicit TcpKeyValueStore(std::unique_ptr<c10d::TCPStore> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    store_->set(key, value);
  }
  std::vector<uint8_t> get(const std::string& key) override { return store_->get(key); }
  bool check(const std::vector<std::string>& keys) override { return store_->check(keys); }

 private:
  std::unique_ptr<c10d::TCPStore> store_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<KeyValueStore>> makeTcpStore(const RendezvousOptions& options) {
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
    return std::shared_ptr<KeyValueStore>(
        std::make_shared<TcpKeyValueStore>(std::make_unique<c10d::TCPStore>(options.master_addr, opts)));
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

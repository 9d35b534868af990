#include "transport/rendezvous.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

absl::Status readIntEnv(const char* name, int* out) {
  const char* value = std::getenv(name);
  if (value == nullptr) return absl::OkStatus();
  if (!absl::SimpleAtoi(value, out)) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous: environment variable ", name, "=\"",
                                                   value, "\" is not an integer"));
  }
  return absl::OkStatus();
}

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
  return absl::OkStatus();
}

absl::StatusOr<RendezvousOptions> rendezvousOptionsFromEnv(RendezvousOptions base) {
  if (absl::Status s = readIntEnv("RANK", &base.rank); !s.ok()) return s;
  if (absl::Status s = readIntEnv("WORLD_SIZE", &base.world_size); !s.ok()) return s;
  if (absl::Status s = readIntEnv("MASTER_PORT", &base.master_port); !s.ok()) return s;
  if (const char* addr = std::getenv("MASTER_ADDR")) base.master_addr = addr;
  return base;
}

namespace {

// Gloo's Store over a KeyValueStore: the same operations, char vs uint8_t bytes; a wait
// without a timeout waits as long as the connect timeout.
class GlooStoreOver final : public gloo::rendezvous::Store {
 public:
  GlooStoreOver(KeyValueStore& store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<uint8_t> value = store_.get(key);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_.wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_.wait(keys, timeout);
  }

 private:
  KeyValueStore& store_;
  std::chrono::milliseconds timeout_;
};

// One deadline for the whole connect. Gloo waits on the store and on each pair with a
// timeout of its own, one after another, so a peer that died after publishing its address
// could keep a rank waiting for several connect timeouts in a row, and a store read could
// wait without any limit. This store gives every wait only what is left of the budget and
// sets the context's timeout to the same remainder, so the pairs (which Gloo makes after
// the ranks' first reads) wait at most what was left then: a connect ends within the
// timeout, or within twice it when a peer dies between publishing its address and
// connecting.
class DeadlineStore final : public gloo::rendezvous::Store {
 public:
  DeadlineStore(gloo::rendezvous::Store& inner, gloo::Context& context,
                std::chrono::milliseconds budget)
      : inner_(inner), context_(context), deadline_(std::chrono::steady_clock::now() + budget) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    remaining();
    inner_.set(key, data);
  }
  std::vector<char> get(const std::string& key) override {
    inner_.wait({key}, remaining());
    return inner_.get(key);
  }
  void wait(const std::vector<std::string>& keys) override { inner_.wait(keys, remaining()); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    inner_.wait(keys, std::min(timeout, remaining()));
  }

 private:
  std::chrono::milliseconds remaining() {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error("the connect timeout ran out");
    context_.setTimeout(left);
    return left;
  }

  gloo::rendezvous::Store& inner_;
  gloo::Context& context_;
  const std::chrono::steady_clock::time_point deadline_;
};

absl::StatusOr<std::shared_ptr<gloo::Context>> connectGlooStore(const RendezvousOptions& options,
                                                                gloo::rendezvous::Store& store) {
  if (absl::Status s = options.validate(); !s.ok()) return s;
  ignoreSigpipe();
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    attr.iface = options.iface;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::PrefixStore prefixed(options.run_id, store);
    auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world_size);
    context->setTimeout(options.connect_timeout);
    DeadlineStore bounded(prefixed, *context, options.connect_timeout);
    context->connectFullMesh(bounded, device);
    return std::shared_ptr<gloo::Context>(std::move(context));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("rendezvous: rank ", options.rank, " of ",
                                               options.world_size, " (run ", options.run_id,
                                               ") could not connect: ", e.what()));
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<gloo::Context>> connectFullMesh(const RendezvousOptions& options,
                                                               KeyValueStore& store) {
  GlooStoreOver gloo_store(store, options.connect_timeout);
  return connectGlooStore(options, gloo_store);
}

absl::StatusOr<std::shared_ptr<gloo::Context>> connectWithFileStore(
    const RendezvousOptions& options) {
  if (options.store_dir.empty()) {
    return absl::InvalidArgumentError("rendezvous: store_dir is empty");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.store_dir, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("rendezvous: cannot create store_dir ",
                                               options.store_dir, ": ", ec.message()));
  }
  gloo::rendezvous::FileStore store(options.store_dir);
  return connectGlooStore(options, store);
}

}  // namespace sparseps

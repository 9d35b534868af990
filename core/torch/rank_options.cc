#include "core/torch/rank_options.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace sparseps {

absl::StatusOr<JobSpec> RankOptions::jobSpec(const MethodRegistry& methods) const {
  if (auto found = methods.find(job.method); !found.ok()) return found.status();
  if (world_size < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "world_size: ", world_size, "; a job needs at least one server and one worker "
        "(torchrun --nproc_per_node=2 or more)"));
  }
  if (rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank: ", rank, " is outside the world of ", world_size));
  }
  auto spec = job.jobSpec(num_servers, world_size - num_servers);
  if (!spec.ok()) return spec.status();
  if (server_log) spec->server.log = server_log;
  return spec;
}

absl::StatusOr<ConnectOptions> RankOptions::connectOptions(const FlatModel& model) const {
  ConnectOptions options;
  options.rendezvous.setRank(rank).setWorldSize(world_size).setRunId(run_id)
      .setConnectTimeout(std::chrono::milliseconds(static_cast<int64_t>(connect_timeout_s * 1e3)));
  if (!iface.empty()) {
    options.rendezvous.setIface(iface);
  } else {
    options.rendezvous.setHostname(hostname);
  }
  if (!store_dir.empty()) {
    options.rendezvous.setStoreDir(store_dir);
  } else if (!master_addr.empty()) {
    options.rendezvous.setMaster(master_addr, master_port);
    options.rendezvous.host_store = host_store;
  } else {
    return absl::InvalidArgumentError(
        "rendezvous: no MASTER_ADDR; launch with torchrun (--redirects=1 --tee=1 on Debian's), "
        "or pass master_addr and "
        "master_port (or store_dir on one machine) to sparseps.init()");
  }
  if (auto s = options.rendezvous.validate(); !s.ok()) return s;
  options.num_servers = num_servers;
  options.hello.method = job.method;
  options.hello.mode = job.mode;
  options.hello.layout_fingerprint = model.fingerprint();
  options.hello.run_secret = run_secret;
  options.peer_timeout = std::chrono::milliseconds(static_cast<int64_t>(job.peer_timeout * 1e3));
  options.max_payload_bytes =
      maxPayloadBytes(model.params().size(), model.paramLayout().size(), model.buffers().size());
  return options;
}

}  // namespace sparseps

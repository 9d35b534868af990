#include "core/torch/rank_options.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace sparseps {

absl::StatusOr<JobSpec> RankOptions::jobSpec(const MethodRegistry& methods) const {
  if (auto found = methods.find(method); !found.ok()) return found.status();
  if (world_size < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "world_size: ", world_size, "; a job needs at least one server and one worker "
        "(torchrun --nproc_per_node=2 or more)"));
  }
  if (rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank: ", rank, " is outside the world of ", world_size));
  }
  JobSpec job;
  job.num_servers = num_servers;
  job.num_workers = world_size - num_servers;
  job.method = method;
  job.method_options = method_options;
  job.method_options.setSeed(seed);
  if (downlink.empty()) {
    job.method_options.setDownlink(defaultDownlink(method));
  } else {
    auto parsed = parseName(kDownlinkNames, "downlink", downlink);
    if (!parsed.ok()) return parsed.status();
    job.method_options.setDownlink(*parsed);
  }
  job.server.lr = LrSchedule{lr, milestones, gamma, warmup_epochs};
  auto parsed_mode = parseName(kConsistencyModeNames, "mode", mode);
  if (!parsed_mode.ok()) return parsed_mode.status();
  job.server.mode = *parsed_mode;
  job.server.staleness = staleness;
  if (pushes_per_epoch <= 0 && (!milestones.empty() || warmup_epochs > 0)) {
    return absl::InvalidArgumentError(
        "milestones and warmup_epochs count epochs: give epoch_steps too (every worker's "
        "steps in one epoch together), or the schedule cannot tell when an epoch ends");
  }
  // No epoch length given (and so no schedule): the rate stays at lr.
  job.server.pushes_per_epoch = pushes_per_epoch > 0 ? pushes_per_epoch : 1e18;
  if (server_log) job.server.log = server_log;
  job.peer_timeout = std::chrono::milliseconds(static_cast<int64_t>(peer_timeout_s * 1e3));
  if (auto s = job.validate(); !s.ok()) return s;
  return job;
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
  options.hello.method = method;
  options.hello.mode = mode;
  options.hello.layout_fingerprint = model.fingerprint();
  options.hello.run_secret = run_secret;
  options.peer_timeout = std::chrono::milliseconds(static_cast<int64_t>(peer_timeout_s * 1e3));
  options.max_payload_bytes =
      maxPayloadBytes(model.params().size(), model.paramLayout().size(), model.buffers().size());
  return options;
}

}  // namespace sparseps

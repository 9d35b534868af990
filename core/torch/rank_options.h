#pragma once
// RankOptions: everything one rank of a job needs to know, in one struct: where it sits in
// the world, how to meet the others, and the job (core/runtime/job_options.h, as the
// experiment driver states it too). ps_rank.h starts a worker or a server from it and a
// model in one call; the Python package (python/) fills it from keyword arguments and
// torchrun's environment. jobSpec() and connectOptions() turn it into the runtime's
// structs, so the checks (JobSpec::validate, the method's own) run in one place.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/net/connect.h"
#include "core/runtime/job.h"
#include "core/runtime/job_options.h"
#include "core/torch/flat_model.h"
#include "optim/method_registry.h"

namespace sparseps {

struct RankOptions {
  // The world: ranks 0..num_servers-1 serve, the rest train.
  int rank = -1;
  int world_size = 0;
  int num_servers = 1;
  std::string run_id = "sparseps";
  std::string master_addr;   // rank 0 hosts the TCP store here...
  int master_port = 29500;
  bool host_store = true;    // false: the launcher's agent hosts it (torchrun's static rendezvous)
  std::string store_dir;     // ...or, when set, a FileStore in this directory (one machine)
  std::string hostname = "127.0.0.1";  // the address this rank binds...
  std::string iface;                   // ...or, when set, this interface's
  double connect_timeout_s = 120;
  // Every rank of a job presents this secret in the handshake; a rank that does not is
  // refused. Empty: no secret (then every rank of the job must leave it empty).
  std::string run_secret;

  JobOptions job;
  std::function<void(const std::string&)> server_log;  // a server's progress lines; empty: none

  bool isServer() const { return rank >= 0 && rank < num_servers; }
  // The job, checked (the method must be one of `methods`).
  absl::StatusOr<JobSpec> jobSpec(const MethodRegistry& methods) const;
  // The rendezvous and handshake of this rank for this model (its fingerprint, and the
  // payload limit its size allows). No link shaping: a caller that wants it sets it.
  absl::StatusOr<ConnectOptions> connectOptions(const FlatModel& model) const;
};

}  // namespace sparseps

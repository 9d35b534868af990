#pragma once
// Job: one parameter-server job as every rank sees it — which ranks serve which shard,
// which method and options, the consistency mode, the schedule and the checkpoints —
// and the two entry points that turn an Endpoint into a running rank: runServerShard for
// ranks 0..S-1, makeWorkerClient for the workers (ranks S..). The experiment driver and the
// drop-in optimizer (ps_optimizer.h) both start ranks through here.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/runtime/endpoint.h"
#include "core/runtime/server.h"
#include "core/runtime/server_core.h"
#include "core/runtime/shard_plan.h"
#include "core/wire/wire.h"
#include "core/runtime/worker_client.h"
#include "optim/method_registry.h"

namespace sparseps {

struct JobSpec {
  int num_servers = 1;
  int num_workers = 1;
  std::string method = "dgs";
  MethodOptions method_options;  // lr0 and num_workers are set from the job, and the seed
                                 // becomes seed + rank in resolveJob
  ServerOptions server;          // mode, staleness, schedule, pushes per epoch, log
  EncodeOptions encode;
  std::string checkpoint_path;   // empty: none; shard s writes <path>.shard<s>
  uint64_t checkpoint_every = 0; // in server versions; 0: only at the end
  bool resume = false;

  int worldSize() const { return num_servers + num_workers; }
  bool isServer(int rank) const { return rank < num_servers; }
  std::vector<int> serverRanks() const;
  std::vector<int> workerRanks() const;
  std::string checkpointPathOf(int shard) const;
  absl::Status validate() const;
};

// What every rank resolves from a job before it starts: the method, the method's view of
// the job (its worker count, the schedule's initial rate — DGS scales its density by
// lr / lr0 — and a seed of this rank's own for the sampled threshold) and the shard plan.
struct ResolvedJob {
  const Method* method;
  MethodOptions options;
  ShardPlan plan;
};
absl::StatusOr<ResolvedJob> resolveJob(const JobSpec& job, const MethodRegistry& methods,
                                       const SegmentSpecs& specs, int rank);

// Serves shard `shard` (== this rank) until every worker is done or dropped.
// initial_params is the whole flat model; the shard takes its own range.
absl::StatusOr<ServerStats> runServerShard(Endpoint& endpoint, const JobSpec& job,
                                           const MethodRegistry& methods,
                                           const SegmentSpecs& specs,
                                           absl::Span<const float> initial_params,
                                           absl::Span<const float> initial_buffers,
                                           uint64_t layout_fingerprint);

// This worker rank's client of the job's server shards: the method's worker rule with
// this rank's options, and the job's shard plan.
absl::StatusOr<std::unique_ptr<WorkerClient>> makeWorkerClient(Endpoint& endpoint,
                                                               const JobSpec& job,
                                                               const MethodRegistry& methods,
                                                               const SegmentSpecs& specs,
                                                               size_t num_buffers);

}  // namespace sparseps

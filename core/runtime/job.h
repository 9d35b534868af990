#pragma once
// The two entry points that turn an Endpoint and a JobSpec (job_spec.h) into a running
// rank: runShard for ranks 0..S-1, makeWorkerClient for the workers (ranks S..).
// The experiment driver, the one-call API (core/torch/ps_rank.h) and the tests start
// ranks through here.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/runtime/job_spec.h"
#include "core/runtime/shard_loop.h"
#include "core/runtime/shard_plan.h"
#include "core/runtime/worker_client.h"
#include "optim/method_registry.h"
#include "transport/endpoint.h"

namespace sparseps {

// What a job resolves to, checked once per process (each rank's, the virtual job's, the
// dry run's) before any rule is made: the method's view of the
// job (its worker count and the schedule's initial rate: DGS scales its density by
// lr / lr0), checked by the method, and the shard plan.
struct ResolvedJob {
  CheckedOptions options;
  ShardPlan plan;

  const Method& method() const { return options.method(); }
  // A rank's options: a seed of its own for the sampled threshold (seed + rank).
  CheckedOptions forRank(int rank) const {
    return options.withSeed(options->seed + static_cast<uint64_t>(rank));
  }
};
absl::StatusOr<ResolvedJob> resolveJob(const JobSpec& job, const MethodRegistry& methods,
                                       const SegmentSpecs& specs);

// Shard `shard`'s core: the method's server rule with the shard's options, the shard's range
// of the whole initial model, and on shard 0 the BN buffers. `server` is the job's options,
// or a driver's variant of them (the virtual job's snapshot hook and thread runner).
std::unique_ptr<ShardCore> makeShardCore(const ResolvedJob& resolved, int shard, int num_workers,
                                         absl::Span<const float> initial_params,
                                         absl::Span<const float> initial_buffers,
                                         const ShardCoreOptions& server);

// Serves shard `shard` (== this rank) until every worker is done or dropped.
// initial_params is the whole flat model; the shard takes its own range.
absl::StatusOr<ShardStats> runShard(Endpoint& endpoint, const JobSpec& job,
                                           const MethodRegistry& methods,
                                           const SegmentSpecs& specs,
                                           absl::Span<const float> initial_params,
                                           absl::Span<const float> initial_buffers,
                                           uint64_t layout_fingerprint);

// Worker rank `rank`'s session: the method's worker rule with this rank's options, its
// vectors in the memory of `ops` (a GPU's for a GPU worker: an error when the method's
// rule does not run there, Method::checkDeviceRule), and the job's shard plan.
absl::StatusOr<WorkerSession> makeWorkerSession(
    const JobSpec& job, const ResolvedJob& resolved, int rank, const SegmentSpecs& specs,
    size_t num_buffers, std::shared_ptr<const VectorOps> ops = hostVectorOps());

// This worker rank's client of the job's server shards, over its session
// (makeWorkerSession).
absl::StatusOr<std::unique_ptr<WorkerClient>> makeWorkerClient(
    Endpoint& endpoint, const JobSpec& job, const MethodRegistry& methods,
    const SegmentSpecs& specs, size_t num_buffers,
    std::shared_ptr<const VectorOps> ops = hostVectorOps());

}  // namespace sparseps

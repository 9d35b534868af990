#include "core/runtime/job.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace sparseps {

absl::StatusOr<ResolvedJob> resolveJob(const JobSpec& job, const MethodRegistry& methods,
                                       const SegmentSpecs& specs) {
  if (auto s = job.validate(); !s.ok()) return s;
  auto method = methods.find(job.method);
  if (!method.ok()) return method.status();
  MethodOptions options = job.method_options;
  options.num_workers = job.num_workers;
  options.lr0 = job.server.lr.lr0;
  auto checked = (*method)->check(options);
  if (!checked.ok()) return checked.status();
  auto plan = ShardPlan::make(specs, job.num_servers);
  if (!plan.ok()) return plan.status();
  return ResolvedJob{*std::move(checked), std::move(*plan)};
}

std::unique_ptr<ShardCore> makeShardCore(const ResolvedJob& resolved, int shard, int num_workers,
                                         absl::Span<const float> initial_params,
                                         absl::Span<const float> initial_buffers,
                                         const ShardCoreOptions& server) {
  const Shard& range = resolved.plan.shard(shard);
  const size_t num_buffers = shard == 0 ? initial_buffers.size() : 0;
  auto core = std::make_unique<ShardCore>(
      resolved.method().makeServer(range.local_specs, resolved.forRank(shard)),
      std::vector<float>(initial_params.begin() + range.offset,
                         initial_params.begin() + range.offset + range.numel),
      num_buffers, num_workers, server);
  if (num_buffers > 0) core->onBuffers(0, {initial_buffers.begin(), initial_buffers.end()});
  return core;
}

absl::StatusOr<ShardStats> runShard(Endpoint& endpoint, const JobSpec& job,
                                    const MethodRegistry& methods, const SegmentSpecs& specs,
                                    absl::Span<const float> initial_params,
                                    absl::Span<const float> initial_buffers,
                                    uint64_t layout_fingerprint) {
  auto resolved = resolveJob(job, methods, specs);
  if (!resolved.ok()) return resolved.status();
  const int shard = endpoint.rank();
  auto core = makeShardCore(*resolved, shard, job.num_workers, initial_params, initial_buffers,
                            job.server);
  const std::string checkpoint = job.checkpointPathOf(shard);
  if (job.resume) {
    auto saved = loadCheckpointToResume(checkpoint, layout_fingerprint);
    if (!saved.ok()) return saved.status();
    if (auto s = core->restore(*saved); !s.ok()) return s;
    job.server.log(absl::StrCat("server shard ", shard, ": resumed at version ",
                                core->version(), " from ", checkpoint));
  }
  auto session = ShardSession::make(*core, job, shard, resolved->plan.shard(shard));
  if (!session.ok()) return session.status();
  ShardLoop loop(endpoint, *session, job, layout_fingerprint);
  if (auto s = loop.run(); !s.ok()) return s;
  return loop.stats();
}

absl::StatusOr<WorkerSession> makeWorkerSession(const JobSpec& job, const ResolvedJob& resolved,
                                                int rank, const SegmentSpecs& specs,
                                                size_t num_buffers,
                                                std::shared_ptr<const VectorOps> ops) {
  const CheckedOptions options = resolved.forRank(rank);
  if (ops->device()) {
    if (absl::Status s = resolved.method().checkDeviceRule(*options); !s.ok()) return s;
  }
  return WorkerSession::make(job, rank, resolved.plan,
                             resolved.method().makeWorker(specs, options, std::move(ops)),
                             num_buffers);
}

absl::StatusOr<std::unique_ptr<WorkerClient>> makeWorkerClient(
    Endpoint& endpoint, const JobSpec& job, const MethodRegistry& methods,
    const SegmentSpecs& specs, size_t num_buffers, std::shared_ptr<const VectorOps> ops) {
  auto resolved = resolveJob(job, methods, specs);
  if (!resolved.ok()) return resolved.status();
  auto session =
      makeWorkerSession(job, *resolved, endpoint.rank(), specs, num_buffers, std::move(ops));
  if (!session.ok()) return session.status();
  return std::make_unique<WorkerClient>(endpoint, std::move(*session));
}

}  // namespace sparseps

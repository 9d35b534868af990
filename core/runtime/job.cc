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

absl::StatusOr<ShardStats> runShard(Endpoint& endpoint, const JobSpec& job,
                                           const MethodRegistry& methods,
                                           const SegmentSpecs& specs,
                                           absl::Span<const float> initial_params,
                                           absl::Span<const float> initial_buffers,
                                           uint64_t layout_fingerprint) {
  auto resolved = resolveJob(job, methods, specs);
  if (!resolved.ok()) return resolved.status();
  const int shard_index = endpoint.rank();
  const Shard& shard = resolved->plan.shard(shard_index);
  const size_t num_buffers = shard_index == 0 ? initial_buffers.size() : 0;

  std::vector<float> model(initial_params.begin() + shard.offset,
                           initial_params.begin() + shard.offset + shard.numel);
  ShardCore core(resolved->method().makeServer(shard.local_specs, resolved->forRank(shard_index)),
                 std::move(model), num_buffers, job.num_workers, job.server);
  if (num_buffers > 0) core.onBuffers(0, {initial_buffers.begin(), initial_buffers.end()});

  const std::string checkpoint = job.checkpointPathOf(shard_index);
  if (job.resume) {
    auto saved = loadCheckpointToResume(checkpoint, layout_fingerprint);
    if (!saved.ok()) return saved.status();
    if (auto s = core.restore(*saved); !s.ok()) return s;
    job.server.log(absl::StrCat("server shard ", shard_index, ": resumed at version ",
                                core.version(), " from ", checkpoint));
  }

  auto session = ShardSession::make(core, job, shard_index, shard);
  if (!session.ok()) return session.status();
  ShardLoop loop(endpoint, *session, job, layout_fingerprint);
  if (auto s = loop.run(); !s.ok()) return s;
  return loop.stats();
}

absl::StatusOr<std::unique_ptr<WorkerClient>> makeWorkerClient(
    Endpoint& endpoint, const JobSpec& job, const MethodRegistry& methods,
    const SegmentSpecs& specs, size_t num_buffers, const MakeWorkerRule& make_rule) {
  auto resolved = resolveJob(job, methods, specs);
  if (!resolved.ok()) return resolved.status();
  const CheckedOptions options = resolved->forRank(endpoint.rank());
  std::unique_ptr<WorkerRule> rule;
  if (make_rule) {
    auto made = make_rule(specs, options);
    if (!made.ok()) return made.status();
    rule = std::move(*made);
  } else {
    rule = resolved->method().makeWorker(specs, options);
  }
  auto session = WorkerSession::make(job, endpoint.rank(), std::move(resolved->plan),
                                     std::move(rule), num_buffers);
  if (!session.ok()) return session.status();
  return std::make_unique<WorkerClient>(endpoint, std::move(*session));
}

}  // namespace sparseps

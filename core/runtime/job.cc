#include "core/runtime/job.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace sparseps {

std::vector<int> JobSpec::serverRanks() const {
  std::vector<int> ranks;
  for (int s = 0; s < num_servers; ++s) ranks.push_back(s);
  return ranks;
}

std::vector<int> JobSpec::workerRanks() const {
  std::vector<int> ranks;
  for (int w = 0; w < num_workers; ++w) ranks.push_back(num_servers + w);
  return ranks;
}

std::string JobSpec::checkpointPathOf(int shard) const {
  return checkpoint_path.empty() ? "" : absl::StrCat(checkpoint_path, ".shard", shard);
}

absl::Status JobSpec::validate() const {
  if (num_servers < 1) return absl::InvalidArgumentError("servers: must be at least 1");
  if (num_workers < 1) {
    return absl::InvalidArgumentError(
        "world size: must leave at least one worker besides the server shards");
  }
  if (resume && checkpoint_path.empty()) {
    return absl::InvalidArgumentError("resume: needs a checkpoint path (the run directory)");
  }
  if (auto s = method_options.validate(); !s.ok()) return s;
  if (auto s = encode.validate(); !s.ok()) return s;
  return server.validate();
}

absl::StatusOr<ResolvedJob> resolveJob(const JobSpec& job, const MethodRegistry& methods,
                                       const SegmentSpecs& specs, int rank) {
  if (auto s = job.validate(); !s.ok()) return s;
  auto method = methods.find(job.method);
  if (!method.ok()) return method.status();
  MethodOptions options = job.method_options;
  options.num_workers = job.num_workers;
  options.lr0 = job.server.lr.lr0;
  options.seed = job.method_options.seed + static_cast<uint64_t>(rank);
  if (auto s = (*method)->validate(options); !s.ok()) return s;
  auto plan = ShardPlan::make(specs, job.num_servers);
  if (!plan.ok()) return plan.status();
  return ResolvedJob{*method, std::move(options), std::move(*plan)};
}

absl::StatusOr<ServerStats> runServerShard(Endpoint& endpoint, const JobSpec& job,
                                           const MethodRegistry& methods,
                                           const SegmentSpecs& specs,
                                           absl::Span<const float> initial_params,
                                           absl::Span<const float> initial_buffers,
                                           uint64_t layout_fingerprint) {
  auto resolved = resolveJob(job, methods, specs, endpoint.rank());
  if (!resolved.ok()) return resolved.status();
  const int shard_index = endpoint.rank();
  const Shard& shard = resolved->plan.shard(shard_index);
  const size_t num_buffers = shard_index == 0 ? initial_buffers.size() : 0;

  std::vector<float> model(initial_params.begin() + shard.offset,
                           initial_params.begin() + shard.offset + shard.numel);
  ServerCore core(resolved->method->makeServer(shard.local_specs, job.num_workers, resolved->options),
                  std::move(model), num_buffers, job.num_workers, job.server);
  if (num_buffers > 0) core.onBuffers(0, {initial_buffers.begin(), initial_buffers.end()});

  const std::string checkpoint = job.checkpointPathOf(shard_index);
  if (job.resume) {
    auto saved = loadCheckpoint(checkpoint);
    if (!saved.ok()) return saved.status();
    if (saved->layout_fingerprint != layout_fingerprint) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", checkpoint, " was written for a different model (layout fingerprint ",
          absl::Hex(saved->layout_fingerprint), ", this model ", absl::Hex(layout_fingerprint), ")"));
    }
    if (auto s = core.restore(*saved); !s.ok()) return s;
    job.server.log(absl::StrCat("server shard ", shard_index, ": resumed at version ",
                                core.version(), " from ", checkpoint));
  }

  ServerLoopOptions loop;
  loop.worker_ranks = job.workerRanks();
  loop.specs = shard.local_specs;
  loop.num_buffers = num_buffers;
  loop.checkpoint_every = job.checkpoint_every;
  loop.checkpoint_path = checkpoint;
  loop.layout_fingerprint = layout_fingerprint;
  loop.encode = job.encode;
  loop.log = job.server.log;
  Server server(endpoint, core, std::move(loop));
  if (auto s = server.run(); !s.ok()) return s;
  return server.stats();
}

absl::StatusOr<std::unique_ptr<WorkerClient>> makeWorkerClient(Endpoint& endpoint,
                                                               const JobSpec& job,
                                                               const MethodRegistry& methods,
                                                               const SegmentSpecs& specs,
                                                               size_t num_buffers) {
  auto resolved = resolveJob(job, methods, specs, endpoint.rank());
  if (!resolved.ok()) return resolved.status();
  WorkerClientOptions options;
  options.server_ranks = job.serverRanks();
  options.num_buffers = num_buffers;
  options.encode = job.encode;
  return std::make_unique<WorkerClient>(endpoint, std::move(resolved->plan), specs,
                                        resolved->method->makeWorker(specs, resolved->options),
                                        options);
}

}  // namespace sparseps

#include "experiments/driver/server_role.h"

#include <torch/utils.h>

#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/runtime/checkpoint.h"
#include "experiments/driver/divergence.h"
#include "experiments/driver/elapsed.h"
#include "experiments/driver/evaluator.h"
#include "experiments/driver/rank_setup.h"
#include "experiments/driver/resume_records.h"
#include "experiments/driver/run_config.h"
#include "experiments/driver/run_dir.h"
#include "experiments/driver/summary.h"
#include "optim/builtin_methods.h"

namespace sparseps {

absl::Status runServerRole(const DriverConfig& config) {
  const auto start = RunClock::now();
  auto dataset = loadDataset(config);
  if (!dataset.ok()) return dataset.status();
  torch::manual_seed(config.job.seed);  // the model every worker starts from
  auto model = buildModel(config, **dataset);
  if (!model.ok()) return model.status();
  const int64_t pushes_per_epoch = pushesPerEpoch(config, **dataset);
  const int rank = config.rank;
  logLine(rank, absl::StrCat("server shard ", rank, ": ", config.model, " with ",
                             model->flat.params().size(), " parameters, ",
                             model->flat.buffers().size(), " BN floats; ", pushes_per_epoch,
                             " pushes per epoch"));

  auto made = makeJobSpec(config, static_cast<double>(pushes_per_epoch));
  if (!made.ok()) return made.status();
  JobSpec job = *std::move(made);
  job.server.log = [rank](const std::string& line) { logLine(rank, line); };

  std::unique_ptr<Evaluator> evaluator;  // shard 0's, made once every rank has met
  uint64_t snapshots = 0;
  job.server.snapshot_every = config.eval_every;
  job.server.on_snapshot = [&](const ShardCore& core) {
    Snapshot snapshot = takeSnapshot(core, ++snapshots, secondsSince(start));
    if (evaluator) {
      evaluator->submit(std::move(snapshot));
      return;
    }
    ShardCheckpoint slice;
    slice.version = snapshot.version;
    slice.pushes = snapshot.pushes;
    slice.model = std::move(snapshot.params);
    const std::string path = snapshotSlicePath(config.out, snapshot, rank);
    if (auto s = makeDirs(config.out + "/snapshots"); !s.ok()) {
      logLine(rank, std::string(s.message()));
    } else if (auto s = saveCheckpoint(path, slice); !s.ok()) {
      logLine(rank, absl::StrCat("cannot write the snapshot slice ", path, ": ", s.message()));
    }
  };

  if (rank == 0) {
    // The workers' metrics lines of steps the checkpoint does not hold go: those steps are
    // trained and logged again (before any worker has its model, so none writes meanwhile).
    job.server.on_restore = [&](const ShardCore& core) -> absl::Status {
      std::vector<uint64_t> kept(static_cast<size_t>(config.numWorkers()));
      for (size_t w = 0; w < kept.size(); ++w) kept[w] = core.workerSteps(static_cast<int>(w));
      auto cut = cutMetricsBack(config.out + "/metrics.jsonl", kept);
      if (!cut.ok()) return cut.status();
      if (*cut > 0) {
        logLine(rank, absl::StrCat("resumed: ", *cut, " lines of metrics.jsonl, of steps after "
                                   "the checkpoint, were cut (those steps are trained again)"));
      }
      return absl::OkStatus();
    };
  }
  auto connected = connectDriverRank(config, *model);
  if (!connected.ok()) return connected.status();
  // Shard 0 coordinates the run's records: config.json, the evaluations, the summary. It
  // writes none before every rank has met, so each rank's checkNewRunDir sees none of them.
  if (rank == 0) {
    if (auto s = writeRunConfig(config, job, *model, **dataset, pushes_per_epoch);
        !s.ok()) {
      return s;
    }
    auto created = Evaluator::create(config, **dataset, job.server.log);
    if (!created.ok()) return created.status();
    evaluator = std::move(*created);
    // A resumed run goes on training: an earlier stop on divergence is lifted (before any
    // worker has its model, so none reads the old file).
    if (std::error_code ec; std::filesystem::remove(divergenceStopPath(config.out), ec)) {
      logLine(rank, "resumed: the earlier stop on divergence (diverged.json) is lifted");
    }
  }
  const auto train_start = RunClock::now();
  auto stats = runShard(*connected->channel, job, methodRegistry(), model->specs, model->flat.params(),
                              model->flat.buffers(), model->flat.fingerprint());
  const double train_seconds = secondsSince(train_start);
  connected->channel->shutdown();
  if (!stats.ok()) return stats.status();

  const nlohmann::json dropped = droppedWorkersJson(stats->dropped);
  std::vector<int> dropped_indices;  // their reports are not waited for
  for (const DroppedWorker& d : stats->dropped) dropped_indices.push_back(d.worker);
  const nlohmann::json clipped = clippedWorkersJson(stats->clipped);
  const nlohmann::json report = {
      {"shard", rank},
      {"bytes_in", stats->bytes_in},
      {"bytes_out", stats->bytes_out},
      {"messages_in", stats->messages_in},
      {"messages_out", stats->messages_out},
      {"dropped_workers", dropped},
      {"clipped_workers", clipped},
      {"train_seconds", train_seconds},
      {"wall_seconds", secondsSince(start)},
      {"peak_rss_mb", peakRssMb()},
  };
  logLine(rank, absl::StrCat("server shard done: ", report.dump()));
  const std::string name = rank == 0 ? "server.json" : absl::StrCat("server", rank, ".json");
  if (auto s = writeJsonFile(absl::StrCat(config.out, "/", name), report); !s.ok()) return s;
  if (!evaluator) return absl::OkStatus();

  logLine(rank, "training done; evaluating what is left of the snapshots");
  absl::StatusOr<EvalRow> final_eval = evaluator->finish();
  if (!final_eval.ok()) logLine(rank, std::string(final_eval.status().message()));
  // Each worker writes its report before it says goodbye; across machines they stay there.
  const auto reports = collectWorkerReports(config.out, config.numWorkers(), dropped_indices,
                                            std::chrono::seconds(config.multiMachine() ? 0 : 10));
  if (static_cast<int>(reports.size()) < config.numWorkers()) {
    logLine(rank, absl::StrCat("summary: ", reports.size(), " of ", config.numWorkers(),
                               " worker reports in ", config.out));
  }
  return writeSummary(config, reports, final_eval.ok() ? *final_eval : EvalRow{}, train_seconds,
                      secondsSince(start), (*dataset)->size(Split::kTrain),
                      {{"server_peak_rss_mb", peakRssMb()},
                       {"dropped_workers", dropped},
                       {"clipped_workers", clipped},
                       // The run's, a resumed run's earlier attempts included (the workers'
                       // reports count this attempt's steps).
                       {"updates", stats->pushes},
                       {"epochs_trained", stats->epochs}});
}

}  // namespace sparseps

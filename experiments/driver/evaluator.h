#pragma once
// Evaluator: scores snapshots of the servers' model off the training path. Server shard 0
// hands it a snapshot at every --eval-every epochs of pushes and when the last worker
// leaves (ShardCore's on_snapshot); a thread of its own, at the lowest CPU priority,
// recomputes the snapshot's BatchNorm statistics from its own weights (--eval-bn-batches
// training batches; see batch_norm_stats.h), evaluates it on the test split and appends a
// row to eval.jsonl labelled with the global epoch, the server version and the time the
// snapshot was taken; with --eval-workers-bn the row also holds the snapshot's score with
// the statistics the workers pushed. No training worker ever waits for it.
//
// With several server shards each holds a slice of the model: in a real job shards 1..
// write theirs to snapshotSlicePath (atomically, as checkpoints are written) and the
// evaluator assembles the whole model from shard 0's slice and those files before it
// scores it (a virtual-time job hands it whole models). Across machines
// that needs a run directory the shards share; a slice that does not arrive within a
// bounded wait skips that evaluation with a log line.

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/shard_plan.h"
#include "core/runtime/snapshot.h"
#include "experiments/datasets/dataset.h"
#include "experiments/driver/driver_config.h"
#include "experiments/driver/rank_setup.h"
#include "experiments/driver/run_dir.h"
#include "experiments/driver/snapshot_queue.h"

namespace sparseps {

// Where shard `shard` writes its slice of snapshot `index` (final: "final").
std::string snapshotSlicePath(const std::string& out, const Snapshot& snapshot, int shard);

struct EvalRow {
  double epoch = 0;
  uint64_t version = 0;
  double accuracy = 0;
  double loss = 0;
};

class Evaluator {
 public:
  // Builds the evaluation model for `dataset` and opens eval.jsonl in config.out. What a
  // killed earlier process of this run left waiting in <out>/snapshots is scored first
  // (SnapshotQueue::adoptLeftOver), so --resume finishes that process's evaluations.
  // log: one line per evaluation (and per skipped one).
  static absl::StatusOr<std::unique_ptr<Evaluator>> create(const DriverConfig& config,
                                                           const Dataset& dataset,
                                                           std::function<void(const std::string&)> log);
  ~Evaluator();

  // Queues a snapshot (any thread); returns at once. None is skipped: beyond kInMemory
  // waiting ones a snapshot waits on disk (SnapshotQueue), and what is still waiting when
  // training ends is scored then. A virtual-time job waits for room in memory instead.
  void submit(Snapshot snapshot);
  static constexpr size_t kInMemory = 2;
  // Training is over: the evaluator leaves its idle priority (other work on the machine no
  // longer comes first), evaluates what is queued, stops the thread and returns the last row
  // written (the final model's), or an error when no evaluation succeeded.
  absl::StatusOr<EvalRow> finish();

 private:
  Evaluator(const DriverConfig& config, const Dataset& dataset, ClassifierModel model,
            ShardPlan plan, JsonLinesWriter evals, std::function<void(const std::string&)> log);
  void run();
  // The whole model of a snapshot in model_'s flat buffers; false when a slice is missing.
  bool assemble(const Snapshot& snapshot);
  absl::Status evaluate(const Snapshot& snapshot);
  // The final snapshot of a model already scored (the run ended on an epoch boundary): a
  // final row that names the epoch row it equals ("same_as_epoch") instead of repeating its
  // scores, so eval.jsonl always ends with the final model's row and no score twice.
  absl::Status markFinal(const Snapshot& snapshot);
  // A score reads the BN statistics the workers pushed (--eval-bn-batches=0, or
  // --eval-workers-bn's second score).
  bool scoresReadWorkersStatistics() const;

  const DriverConfig& config_;
  const Dataset& dataset_;
  ClassifierModel model_;
  ShardPlan plan_;
  JsonLinesWriter evals_;
  std::function<void(const std::string&)> log_;

  std::mutex mu_;
  std::condition_variable cv_;
  SnapshotQueue queue_;
  bool stopping_ = false;
  std::optional<EvalRow> last_;
  uint64_t last_version_ = UINT64_MAX;
  std::vector<float> last_buffers_;  // the BN statistics the last scored snapshot came with
  // The last row is the final model's: a resumed run whose training was already over
  // takes its final snapshot again, and that model is not named twice.
  bool last_row_final_ = false;
  std::thread thread_;
};

}  // namespace sparseps

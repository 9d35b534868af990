#pragma once
// The end of a run: every worker writes its own totals to worker<k>.json before it leaves;
// server shard 0, once training is over and the final model is evaluated, collects them
// and writes summary.json, so the summary's samples, bytes and staleness are what each
// worker counted, not an estimate, and its throughput is the job's: all samples over the
// time the servers served (training only: evaluation runs off that path), so one slow
// worker does not rewrite it; each worker's own rate is listed beside it.

#include <chrono>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "core/runtime/shard_session.h"
#include "core/runtime/step_record.h"
#include "experiments/driver/divergence.h"
#include "experiments/driver/driver_config.h"
#include "experiments/driver/evaluator.h"

namespace sparseps {

struct WorkerTotals {
  int worker = 0;
  int rank = 0;
  uint64_t steps = 0;
  uint64_t samples = 0;
  double train_seconds = 0;   // this worker's training loop
  double compute_seconds = 0;
  double compress_seconds = 0;
  double comm_seconds = 0;
  uint64_t bytes_up = 0;
  uint64_t bytes_down = 0;
  uint64_t staleness_sum = 0;
  double peak_rss_mb = 0;     // this process's peak resident memory
  std::optional<Divergence> divergence;  // its first, if its loss diverged

  // Adds one step (all but train_seconds, which is the worker loop's own).
  void add(const StepRecord& r);
  nlohmann::json toJson() const;
};

// A step's line of metrics.jsonl (rank: the worker's rank).
nlohmann::json metricsLine(const StepRecord& r, int rank);

std::string workerReportPath(const std::string& out, int worker);

// This process's peak resident memory so far, in MiB.
double peakRssMb();

// The summary's dropped_workers: who, when, after how many pushes, why.
nlohmann::json droppedWorkersJson(const std::vector<DroppedWorker>& dropped);
// [{worker, rank, pushes}]: the workers whose pushes the push guard clipped.
nlohmann::json clippedWorkersJson(const std::vector<ClippedWorker>& clipped);

// The reports of workers 0..workers-1 found in `out`, waiting up to `timeout` for those not
// dropped (fewer when some never came: a worker on another machine writes into its own
// run directory); a dropped worker's report is taken only if it is there already.
std::vector<nlohmann::json> collectWorkerReports(const std::string& out, int workers,
                                                 const std::vector<int>& dropped,
                                                 std::chrono::seconds timeout);

// summary.json from the config, the worker reports, the final evaluation, eval.jsonl (for
// the best accuracy) and the servers' training time (simulated in virtual time); the
// earliest worker divergence (divergence.h), if any, as diverged_at_step, diverged_worker
// and diverged_loss (null when none diverged);
// train_examples: the training set's size (the run's real epochs are its samples over it,
// which a --max-steps cap makes fewer than --epochs); `extra` adds fields of its own.
absl::Status writeSummary(const DriverConfig& config, const std::vector<nlohmann::json>& reports,
                          const EvalRow& final_eval, double train_seconds, double wall_seconds,
                          int64_t train_examples,
                          const nlohmann::json& extra = nlohmann::json::object());

}  // namespace sparseps

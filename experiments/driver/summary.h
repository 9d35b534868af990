#pragma once
// The end of a run: every worker writes its own totals to worker<k>.json; the first worker
// collects them (waiting a bounded time for the others) and writes summary.json, so the
// summary's samples, bytes and staleness are what each worker counted, not an estimate.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "experiments/driver/driver_config.h"

namespace sparseps {

struct WorkerTotals {
  int worker = 0;
  int rank = 0;
  uint64_t steps = 0;
  uint64_t samples = 0;
  double train_seconds = 0;   // training only: evaluation and waiting excluded
  double eval_seconds = 0;
  double compute_seconds = 0;
  double compress_seconds = 0;
  double comm_seconds = 0;
  uint64_t bytes_up = 0;
  uint64_t bytes_down = 0;
  uint64_t staleness_sum = 0;

  nlohmann::json toJson() const;
};

std::string workerReportPath(const std::string& out, int worker);

// The reports of workers [first, end) found in `out` within `timeout` (fewer when some
// never came: a worker on another machine writes into its own run directory).
std::vector<nlohmann::json> collectWorkerReports(const std::string& out, int first, int end,
                                                 std::chrono::seconds timeout);

struct FinalEval {
  double accuracy = 0;
  uint64_t version = 0;
};

// summary.json from the config, the worker reports, the final evaluation and eval.jsonl
// (for the best accuracy).
absl::Status writeSummary(const DriverConfig& config, const std::vector<nlohmann::json>& reports,
                          const FinalEval& final_eval, double wall_seconds);

}  // namespace sparseps

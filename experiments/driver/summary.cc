#include "experiments/driver/summary.h"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "experiments/driver/run_dir.h"

namespace sparseps {

void WorkerTotals::add(const StepRecord& r) {
  ++steps;
  samples += static_cast<uint64_t>(r.samples);
  compute_seconds += r.compute;
  compress_seconds += r.codec;
  comm_seconds += r.comm;
  bytes_up += r.bytes_up;
  bytes_down += r.bytes_down;
  staleness_sum += r.staleness;
}

nlohmann::json metricsLine(const StepRecord& r, int rank) {
  return {{"time", r.time},
          {"rank", rank},
          {"worker", r.worker},
          {"step", r.step},
          {"epoch", r.epoch},
          {"samples", r.samples},
          {"loss", r.loss},
          {"lr", r.lr},
          {"bytes_up", r.bytes_up},
          {"bytes_down", r.bytes_down},
          {"staleness", r.staleness},
          {"compute_s", r.compute},
          {"compress_s", r.codec},
          {"comm_s", r.comm}};
}

nlohmann::json WorkerTotals::toJson() const {
  return {{"worker", worker},
          {"rank", rank},
          {"steps", steps},
          {"samples", samples},
          {"train_seconds", train_seconds},
          {"compute_seconds", compute_seconds},
          {"compress_seconds", compress_seconds},
          {"comm_seconds", comm_seconds},
          {"bytes_up", bytes_up},
          {"bytes_down", bytes_down},
          {"staleness_sum", staleness_sum},
          {"peak_rss_mb", peak_rss_mb},
          {"divergence", divergence ? divergence->toJson() : nlohmann::json()}};
}

double peakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

nlohmann::json droppedWorkersJson(const std::vector<DroppedWorker>& dropped) {
  nlohmann::json out = nlohmann::json::array();
  for (const DroppedWorker& d : dropped) {
    out.push_back({{"worker", d.worker},
                   {"rank", d.rank},
                   {"seconds", d.seconds},
                   {"pushes", d.pushes},
                   {"reason", d.reason}});
  }
  return out;
}

nlohmann::json clippedWorkersJson(const std::vector<ClippedWorker>& clipped) {
  nlohmann::json out = nlohmann::json::array();
  for (const ClippedWorker& c : clipped) {
    out.push_back({{"worker", c.worker}, {"rank", c.rank}, {"pushes", c.pushes}});
  }
  return out;
}

std::string workerReportPath(const std::string& out, int worker) {
  return absl::StrCat(out, "/worker", worker, ".json");
}

std::vector<nlohmann::json> collectWorkerReports(const std::string& out, int workers,
                                                 const std::vector<int>& dropped,
                                                 std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<nlohmann::json> reports(workers);
  std::vector<bool> found(workers, false);
  std::vector<bool> awaited(workers, true);
  for (int w : dropped) {
    if (w >= 0 && w < workers) awaited[w] = false;
  }
  while (true) {
    for (int w = 0; w < workers; ++w) {
      if (found[w]) continue;
      auto report = readJsonFile(workerReportPath(out, w));
      if (report.ok()) {
        reports[w] = std::move(*report);
        found[w] = true;
      }
    }
    bool all = true;
    for (int w = 0; w < workers; ++w) all = all && (found[w] || !awaited[w]);
    if (all || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::vector<nlohmann::json> present;
  for (int w = 0; w < workers; ++w) {
    if (found[w]) present.push_back(std::move(reports[w]));
  }
  return present;
}

namespace {

double bestAccuracy(const std::string& eval_path, double fallback) {
  double best = fallback;
  std::ifstream file(eval_path);
  std::string line;
  while (std::getline(file, line)) {
    auto value = nlohmann::json::parse(line, nullptr, false);
    if (!value.is_discarded() && value.contains("accuracy")) {
      best = std::max(best, value["accuracy"].get<double>());
    }
  }
  return best;
}

}  // namespace

absl::Status writeSummary(const DriverConfig& config, const std::vector<nlohmann::json>& reports,
                          const EvalRow& final_eval, double train_seconds, double wall_seconds,
                          int64_t train_examples, const nlohmann::json& extra) {
  uint64_t samples = 0, bytes_up = 0, bytes_down = 0, steps = 0, staleness = 0;
  double compute = 0, compress = 0, comm = 0, worker_rss = 0;
  nlohmann::json worker_throughput = nlohmann::json::array();
  for (const auto& r : reports) {
    const double seconds = r["train_seconds"].get<double>();
    worker_throughput.push_back(seconds > 0 ? r["samples"].get<double>() / seconds : 0.0);
    worker_rss = std::max(worker_rss, r.value("peak_rss_mb", 0.0));
    compute += r["compute_seconds"].get<double>();
    compress += r["compress_seconds"].get<double>();
    comm += r["comm_seconds"].get<double>();
    samples += r["samples"].get<uint64_t>();
    bytes_up += r["bytes_up"].get<uint64_t>();
    bytes_down += r["bytes_down"].get<uint64_t>();
    steps += r["steps"].get<uint64_t>();
    staleness += r["staleness_sum"].get<uint64_t>();
  }
  nlohmann::json summary = {
      {"clock", config.clock},
      {"method", config.job.method},
      {"model", config.model},
      {"dataset", config.dataset},
      {"world_size", config.world_size},
      {"servers", config.servers},
      {"server_threads", config.job.server_threads},
      {"push_guard", config.job.push_guard},
      {"workers", config.numWorkers()},
      {"mode", config.job.mode},
      {"network", config.network()},
      {"bandwidth", config.bandwidth},
      {"bandwidth_bps", config.bandwidth_bps},
      {"latency_ns", config.latency_ns},
      {"batch_size", config.batch_size},
      {"epochs", config.epochs},
      {"max_steps", config.max_steps},
      {"epochs_trained", train_examples > 0 ? static_cast<double>(samples) /
                                                  static_cast<double>(train_examples)
                                            : 0.0},
      {"final_accuracy", final_eval.accuracy},
      {"final_epoch", final_eval.epoch},
      {"best_accuracy", bestAccuracy(config.out + "/eval.jsonl", final_eval.accuracy)},
      {"wall_seconds", wall_seconds},
      {"train_seconds", train_seconds},
      {"samples", samples},
      {"throughput", train_seconds > 0 ? static_cast<double>(samples) / train_seconds : 0.0},
      {"worker_throughput", worker_throughput},
      {"bytes_up", bytes_up},
      {"bytes_down", bytes_down},
      {"updates", steps},
      {"server_version", final_eval.version},
      {"mean_staleness", steps > 0 ? static_cast<double>(staleness) / static_cast<double>(steps)
                                   : 0.0},
      {"workers_reported", reports.size()},
      {"worker_peak_rss_mb", worker_rss},
      // Per step, over all workers: what the closed-form speedup model is built from.
      {"mean_compute_s", steps > 0 ? compute / static_cast<double>(steps) : 0.0},
      {"mean_compress_s", steps > 0 ? compress / static_cast<double>(steps) : 0.0},
      {"mean_comm_s", steps > 0 ? comm / static_cast<double>(steps) : 0.0},
  };
  // The first divergence in the run's time: the step, worker and loss that name it.
  const nlohmann::json* first = nullptr;
  for (const nlohmann::json& r : reports) {
    const auto d = r.find("divergence");
    if (d == r.end() || d->is_null()) continue;
    const double when = (*d)["seconds"].get<double>();
    if (!first || when < (*first)["divergence"]["seconds"].get<double>()) first = &r;
  }
  summary["diverged_at_step"] = first ? (*first)["divergence"]["step"] : nlohmann::json();
  summary["diverged_worker"] = first ? (*first)["worker"] : nlohmann::json();
  summary["diverged_loss"] = first ? (*first)["divergence"]["loss"] : nlohmann::json();
  summary["stop_on_divergence"] = config.stop_on_divergence;
  summary.update(extra);
  return writeJsonFile(config.out + "/summary.json", summary);
}

}  // namespace sparseps

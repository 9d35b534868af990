#include "experiments/driver/virtual_role.h"

#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/virtual/virtual_job.h"
#include "experiments/driver/divergence.h"
#include "experiments/driver/elapsed.h"
#include "experiments/driver/evaluator.h"
#include "experiments/driver/progress.h"
#include "experiments/driver/rank_setup.h"
#include "experiments/driver/run_config.h"
#include "experiments/driver/run_dir.h"
#include "experiments/driver/summary.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

// Every worker's steps on one module: each step copies the worker's parameters and BN
// buffers into the module's flat buffers, runs the forward and backward pass of the
// worker's next batch and copies the BN buffers back, so N workers cost N replicas of
// the flat vectors but one module and one set of activations.
class DriverWorkload : public VirtualWorkload {
 public:
  DriverWorkload(const DriverConfig& config, const Dataset& dataset, ClassifierModel& model)
      : config_(config), dataset_(dataset), model_(model), workers_(config.numWorkers()) {}

  Step next(int worker, absl::Span<const float> w, absl::Span<float> buffers,
            absl::Span<float> grad) override {
    State& s = workers_[worker];
    Step step;
    if (stopped_ || s.stopped || s.epoch >= config_.epochs ||
        (config_.max_steps > 0 && s.steps >= config_.max_steps)) {
      step.kind = Step::Kind::kDone;
      return step;
    }
    if (!s.batches) {
      s.batches.emplace(dataset_.trainBatches(worker, config_.numWorkers(), s.epoch,
                                              config_.batch_size));
    }
    auto more = s.batches->next(&batch_);
    if (!more.ok()) {
      failure_ = more.status();
      step.kind = Step::Kind::kDone;
      return step;
    }
    if (!*more) {  // the epoch is over: its BN statistics go to the servers
      s.batches.reset();
      ++s.epoch;
      step.kind = Step::Kind::kEpochEnd;
      return step;
    }
    std::copy(w.begin(), w.end(), model_.flat.params().begin());
    std::copy(buffers.begin(), buffers.end(), model_.flat.buffers().begin());
    const double cpu0 = threadCpuSeconds();
    const auto wall0 = RunClock::now();
    model_.flat.zeroGrad();
    const torch::Tensor logits = model_.net->forward(batch_.images);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(logits, batch_.labels);
    loss.backward();
    // One thread: the thread's CPU time, unmoved by whatever else runs on this machine.
    // More: the wall time of a worker with that many cores.
    step.compute_seconds =
        threadsFor(config_) == 1 ? threadCpuSeconds() - cpu0 : secondsSince(wall0);
    std::copy(model_.flat.grads().begin(), model_.flat.grads().end(), grad.begin());
    std::copy(model_.flat.buffers().begin(), model_.flat.buffers().end(), buffers.begin());
    step.epoch = s.epoch;
    step.samples = batch_.labels.size(0);
    step.loss = loss.item<double>();
    if (auto d = s.divergence.observe(s.steps + 1, step.loss, s.last_time)) {
      s.diverged = d;
      std::printf("%s\n", d->message(worker, config_.stop_on_divergence).c_str());
      std::fflush(stdout);
      s.stopped = d->stopsWorker(config_.stop_on_divergence);
      stopped_ = stopped_ || config_.stop_on_divergence;
      if (s.stopped) {  // this step is not pushed
        step = Step();
        step.kind = Step::Kind::kDone;
        return step;
      }
    }
    step.correct = logits.argmax(1).eq(batch_.labels).sum().item<int64_t>();
    ++s.steps;
    return step;
  }

  const absl::Status& failure() const { return failure_; }
  // The simulated time of worker `worker`'s last applied step (its divergence's time).
  void stepApplied(int worker, double time) { workers_[worker].last_time = time; }
  const std::optional<Divergence>& divergence(int worker) const {
    return workers_[worker].diverged;
  }

 private:
  struct State {
    int epoch = 0;
    int64_t steps = 0;
    std::optional<BatchIterator> batches;
    DivergenceWatch divergence;
    std::optional<Divergence> diverged;
    bool stopped = false;  // at its divergence
    double last_time = 0;
  };
  const DriverConfig& config_;
  const Dataset& dataset_;
  ClassifierModel& model_;
  std::vector<State> workers_;
  Batch batch_;
  absl::Status failure_;
  bool stopped_ = false;  // every worker's next step is kDone (--stop-on-divergence)
};

// Per-worker totals from the step records (the worker<k>.json of a real run).
}  // namespace

absl::Status runVirtualRole(const DriverConfig& config) {
  const auto start = RunClock::now();
  auto dataset = loadDataset(config);
  if (!dataset.ok()) return dataset.status();
  torch::manual_seed(config.job.seed);  // the servers' initial model, as in a real run
  auto model = buildModel(config, **dataset);
  if (!model.ok()) return model.status();
  const int64_t pushes_per_epoch = pushesPerEpoch(config, **dataset);

  VirtualJobOptions options;
  auto job = makeJobSpec(config, static_cast<double>(pushes_per_epoch));
  if (!job.ok()) return job.status();
  options.job = *std::move(job);
  options.job.checkpoint_path.clear();  // nothing to resume: the run is in one process
  options.job.server.log = [](const std::string& line) { logLine(0, line); };
  options.job.server.snapshot_every = config.eval_every;
  options.time = config.time;
  options.specs = model->specs;
  options.initial_params.assign(model->flat.params().begin(), model->flat.params().end());
  options.initial_buffers.assign(model->flat.buffers().begin(), model->flat.buffers().end());
  if (auto s = writeRunConfig(config, options.job, *model, **dataset, pushes_per_epoch);
      !s.ok()) {
    return s;
  }
  auto evaluator = Evaluator::create(config, **dataset, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  if (!evaluator.ok()) return evaluator.status();
  options.on_snapshot = [&](Snapshot snapshot) { (*evaluator)->submit(std::move(snapshot)); };

  auto metrics = JsonLinesWriter::open(config.out + "/metrics.jsonl");
  if (!metrics.ok()) return metrics.status();
  std::vector<WorkerTotals> totals(config.numWorkers());
  DriverWorkload workload(config, **dataset, *model);
  absl::Status write_failure;
  int shown_epoch = 0;
  double loss_sum = 0;
  int64_t loss_count = 0;
  options.on_step = [&](const StepRecord& r) {
    WorkerTotals& t = totals[r.worker];
    t.worker = r.worker;
    t.rank = config.servers + r.worker;
    t.train_seconds = r.time;
    t.add(r);
    auto s = metrics->append(metricsLine(r, config.servers + r.worker));
    if (!s.ok() && write_failure.ok()) write_failure = s;
    workload.stepApplied(r.worker, r.time);
    loss_sum += r.loss;
    ++loss_count;
    if (r.worker == 0 && r.epoch > shown_epoch) {
      // Worker 0 started a new epoch: one console line per epoch of progress.
      std::printf("epoch %d/%d done: simulated %.1f s, real %.0f s, mean train loss %.4f\n",
                  r.epoch, config.epochs, r.time, secondsSince(start),
                  loss_sum / static_cast<double>(loss_count));
      std::fflush(stdout);
      shown_epoch = r.epoch;
      loss_sum = 0;
      loss_count = 0;
    }
  };

  logLine(0, absl::StrCat("virtual time: ", config.numWorkers(), " workers, ", config.servers,
                          " server shard(s), ", config.model, " (", model->specs.size(),
                          " segments, ", options.initial_params.size(), " parameters), ",
                          pushes_per_epoch, " pushes per epoch"));
  const auto sim_start = RunClock::now();
  const double sim_cpu0 = threadCpuSeconds();
  auto result = runVirtualJob(options, methodRegistry(), workload);
  const double sim_real = secondsSince(sim_start);
  const double sim_cpu = threadCpuSeconds() - sim_cpu0;
  if (!workload.failure().ok()) return workload.failure();
  if (!result.ok()) return result.status();
  if (!write_failure.ok()) return write_failure;
  if (auto s = metrics->flush(); !s.ok()) return s;

  absl::StatusOr<EvalRow> final_eval = (*evaluator)->finish();
  if (!final_eval.ok()) logLine(0, std::string(final_eval.status().message()));
  std::vector<nlohmann::json> reports;
  for (int w = 0; w < config.numWorkers(); ++w) {
    totals[w].divergence = workload.divergence(w);
    reports.push_back(totals[w].toJson());
  }
  nlohmann::json histogram = nlohmann::json::object();
  for (const auto& [staleness, steps] : result->staleness) histogram[std::to_string(staleness)] = steps;
  // Where the time of the simulation went: the workers' forward/backward passes, and
  // everything else (real_overhead_fraction): the method rules and wire coding of both
  // sides (real_codec_seconds of it), copies of parameters in and out of the shared module,
  // data loading, events and records. With one thread, as CPU time of the simulating
  // thread, which other load on the machine does not inflate as it does wall time (the
  // passes are measured the same way); with more, as wall time.
  const bool cpu_basis = threadsFor(config) == 1;
  const double spent = cpu_basis ? sim_cpu : sim_real;
  const double overhead = spent - result->real_compute_seconds;
  const double peak_rss_mb = peakRssMb();
  const nlohmann::json extra = {
      {"time_model", config.toJson()["time_model"]},
      {"simulated_seconds", result->simulated_seconds},
      {"real_seconds", sim_real},
      {"real_compute_seconds", result->real_compute_seconds},
      {"real_codec_seconds", result->real_codec_seconds},
      {"real_cpu_seconds", sim_cpu},
      {"real_overhead_fraction", spent > 0 ? overhead / spent : 0.0},
      {"peak_rss_mb", peak_rss_mb},
      {"staleness_histogram", histogram},
      {"bytes_up_total", result->bytes_up},
      {"bytes_down_total", result->bytes_down},
      {"dropped_workers", droppedWorkersJson(result->dropped)},
      {"clipped_workers", clippedWorkersJson(result->clipped)},
  };
  logLine(0, absl::StrFormat("simulated %.2f s in %.1f s real (forward/backward %.1f s, "
                             "method rules and wire %.1f s); peak RSS %.0f MB",
                             result->simulated_seconds, sim_real, result->real_compute_seconds,
                             result->real_codec_seconds, peak_rss_mb));
  EvalRow last = final_eval.ok() ? *final_eval : EvalRow{};
  last.version = result->server_version;
  return writeSummary(config, reports, last, result->simulated_seconds, secondsSince(start),
                      (*dataset)->size(Split::kTrain), extra);
}

}  // namespace sparseps

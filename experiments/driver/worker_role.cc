#include "experiments/driver/worker_role.h"

#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include <cmath>
#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/runtime/checkpoint.h"
#include "core/torch/ps_rank.h"
#include "experiments/driver/batch_norm_stats.h"
#include "experiments/driver/compute_slots.h"
#include "experiments/driver/resume_records.h"
#include "experiments/driver/device.h"
#include "experiments/driver/divergence.h"
#include "experiments/driver/elapsed.h"
#include "experiments/driver/evaluate.h"
#include "experiments/driver/progress.h"
#include "experiments/driver/rank_setup.h"
#include "experiments/driver/run_dir.h"
#include "experiments/driver/summary.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

class WorkerRun {
 public:
  WorkerRun(const DriverConfig& config, RunClock::time_point process_start)
      : config_(config), process_start_(process_start) {}

  absl::Status run(bool* trained);

 private:
  absl::Status setUp();
  absl::Status trainEpoch(int epoch);
  absl::Status saveWorkerState(int epochs_done);
  absl::Status restoreWorkerState(uint64_t steps_done);
  // The first worker's console: evaluations the servers appended to eval.jsonl.
  void showEvaluations();
  absl::Status finishRun();
  bool first() const { return config_.isFirstWorker(); }
  bool stepsLeft() const {
    return (config_.max_steps == 0 || static_cast<int64_t>(totals_.steps) < config_.max_steps) &&
           !stopped_ && !otherDiverged();
  }
  // --stop-on-divergence: another worker's loss diverged (it left divergenceStopPath).
  bool otherDiverged() const;
  // Records and reports this worker's divergence; false when the worker stops here.
  bool goOnAfter(const Divergence& divergence);
  // Checked once the loss has diverged: a finite loss can still give a non-finite gradient,
  // whose push the servers would refuse, dropping this worker before its report is written.
  bool gradientFinite() const;

  const DriverConfig& config_;
  RunClock::time_point process_start_;
  // A resumed worker's metrics number its steps and times on from the steps the servers'
  // checkpoint holds and its last kept line (resume_records.h).
  uint64_t steps_before_ = 0;
  double time_before_ = 0;
  c10::Device device_ = c10::Device(c10::DeviceType::CPU);  // the model's (--device)
  std::unique_ptr<Dataset> dataset_;
  std::optional<ClassifierModel> model_;
  std::optional<ComputeSlots> slots_;
  StoredConnection connected_;
  std::unique_ptr<PsWorker> worker_;
  std::optional<JsonLinesWriter> metrics_;
  std::optional<JsonLinesFollower> evals_;
  std::optional<ProgressPrinter> progress_;
  int64_t pushes_per_epoch_ = 0;
  int64_t own_batches_ = 0;  // this worker's batches (steps) in one epoch
  int start_epoch_ = 0;
  int64_t start_batch_ = 0;  // batches of start_epoch_ done before a resume
  double epochs_done_ = 0;  // fractional when --max-steps ends an epoch early
  WorkerTotals totals_;
  DivergenceWatch divergence_;
  bool stopped_ = false;  // this worker stopped at its divergence
  ProgressState state_;
};

bool WorkerRun::otherDiverged() const {
  return config_.stop_on_divergence && std::filesystem::exists(divergenceStopPath(config_.out));
}

bool WorkerRun::gradientFinite() const {
  for (const torch::Tensor& p : model_->net->parameters()) {
    if (p.grad().defined() && !torch::isfinite(p.grad()).all().item<bool>()) return false;
  }
  return true;
}

bool WorkerRun::goOnAfter(const Divergence& divergence) {
  totals_.divergence = divergence;
  const std::string what = divergence.message(config_.workerIndex(), config_.stop_on_divergence);
  logLine(config_.rank, what);
  if (first()) progress_->message(what);
  if (config_.stop_on_divergence) {  // the other workers stop when they see it
    nlohmann::json stop = divergence.toJson();
    stop["worker"] = config_.workerIndex();
    if (auto s = writeJsonFile(divergenceStopPath(config_.out), stop); !s.ok()) {
      logLine(config_.rank, absl::StrCat("cannot tell the other workers to stop: ", s.message()));
    }
  }
  stopped_ = divergence.stopsWorker(config_.stop_on_divergence);
  return !stopped_;
}

absl::Status WorkerRun::setUp() {
  auto dataset = loadDataset(config_);
  if (!dataset.ok()) return dataset.status();
  dataset_ = std::move(*dataset);
  torch::manual_seed(config_.job.seed + static_cast<uint64_t>(config_.rank));
  device_ = rankDevice(config_);
  auto model = buildModel(config_, *dataset_, device_);  // its weights come from the servers
  if (!model.ok()) return model.status();
  model_.emplace(std::move(*model));
  pushes_per_epoch_ = pushesPerEpoch(config_, *dataset_);
  own_batches_ =
      dataset_->trainBatches(config_.workerIndex(), config_.numWorkers(), 0, config_.batch_size)
          .numBatches();
  if (const int slots = computeSlotsFor(config_); slots > 0) {
    auto opened = ComputeSlots::open(config_.out + "/slots", slots);
    if (!opened.ok()) return opened.status();
    slots_.emplace(std::move(*opened));
  }

  auto connected = connectDriverRank(config_, *model_);
  if (!connected.ok()) return connected.status();
  connected_ = std::move(*connected);
  auto job = makeJobSpec(config_, static_cast<double>(pushes_per_epoch_));
  if (!job.ok()) return job.status();
  auto client =
      makeModelWorkerClient(*connected_.channel, *job, methodRegistry(), model_->flat, model_->specs);
  if (!client.ok()) return client.status();
  auto worker = PsWorker::start(model_->flat, std::move(*client));
  if (!worker.ok()) return worker.status();
  worker_ = std::move(*worker);
  const ServerProgress& started = worker_->initial();
  if (config_.resume && own_batches_ > 0) {
    // The servers' checkpoint says how many of this worker's pushes it holds: the worker
    // goes on from the batch after them, in the same epoch order, so no batch is trained
    // twice or left out.
    const auto steps = static_cast<int64_t>(started.worker_steps);
    start_epoch_ = static_cast<int>(steps / own_batches_);
    start_batch_ = steps % own_batches_;
    epochs_done_ = static_cast<double>(steps) / static_cast<double>(own_batches_);
    if (auto s = restoreWorkerState(started.worker_steps); !s.ok()) return s;
    // Server shard 0 cut metrics.jsonl back to the checkpoint before it sent the model.
    steps_before_ = started.worker_steps;
    time_before_ = lastMetricsTime(config_.out + "/metrics.jsonl", config_.workerIndex());
  }
  logLine(config_.rank, absl::StrCat("worker ", config_.workerIndex(), ": ",
                                     dataset_->description(), "; model ", config_.model, " (",
                                     model_->flat.params().size(), " parameters) from server "
                                     "version ", started.version, ", starting at epoch ",
                                     start_epoch_, " batch ", start_batch_));

  auto metrics = JsonLinesWriter::open(config_.out + "/metrics.jsonl");
  if (!metrics.ok()) return metrics.status();
  metrics_.emplace(std::move(*metrics));
  totals_.worker = config_.workerIndex();
  totals_.rank = config_.rank;
  if (first()) {
    evals_.emplace(config_.out + "/eval.jsonl");
    progress_.emplace(progressStyleFrom(config_.progress, stdout), config_.epochs,
                      config_.progress_columns);
  } else {
    // The other workers log one plain line per epoch.
    progress_.emplace(ProgressStyle::kNone, config_.epochs);
  }
  return absl::OkStatus();
}

absl::Status WorkerRun::trainEpoch(int epoch) {
  ImageClassifier& net = *model_->net;
  net.train();
  BatchIterator batches =
      dataset_->trainBatches(config_.workerIndex(), config_.numWorkers(), epoch, config_.batch_size);
  state_.epoch = epoch;
  state_.step = 0;
  state_.steps_in_epoch = batches.numBatches();
  if (epoch == start_epoch_ && start_batch_ > 0) {
    batches.skip(start_batch_);
    state_.step = start_batch_;
  }
  progress_->startEpoch(epoch);
  const auto epoch_start = RunClock::now();
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  Batch batch;
  while (stepsLeft()) {
    auto more = batches.next(&batch);
    if (!more.ok()) return more.status();
    if (!*more) break;
    std::optional<ComputeSlots::Held> slot;
    if (slots_) slot.emplace(slots_->acquire());
    const auto t0 = RunClock::now();  // compute_s: the pass itself, not the wait for a slot
    worker_->zeroGrad();
    const torch::Tensor labels = batch.labels.to(device_);
    const torch::Tensor logits = net.forward(batch.images.to(device_));
    const torch::Tensor loss = torch::nn::functional::cross_entropy(logits, labels);
    loss.backward();
    // Reading the loss waits for the passes, which a GPU runs after they were queued.
    const double loss_value = loss.item<double>();
    slot.reset();
    const double compute_s = secondsSince(t0);
    if (auto diverged = divergence_.observe(totals_.steps + 1, loss_value,
                                            secondsSince(process_start_))) {
      if (!goOnAfter(*diverged)) break;  // this step is not pushed
    }
    if (totals_.divergence && !gradientFinite()) {  // nor is one the wire would refuse
      logLine(config_.rank, absl::StrCat("worker ", config_.workerIndex(), "'s gradient at step ",
                                         totals_.steps + 1, " is not finite: this worker stops "
                                         "(its gradient cannot be sent)"));
      stopped_ = true;
      break;
    }
    const double push_lr = worker_->lr();  // a step's reply may bring the next rate
    if (auto s = worker_->step(epoch); !s.ok()) return s;
    const StepStats& stats = worker_->lastStep();

    const int64_t n = batch.labels.size(0);
    StepRecord r;
    r.worker = config_.workerIndex();
    r.epoch = epoch;
    r.time = time_before_ + secondsSince(process_start_);
    r.compute = compute_s;
    r.codec = stats.compress_seconds;
    r.comm = stats.communicate_seconds;
    r.bytes_up = stats.bytes_up;
    r.bytes_down = stats.bytes_down;
    r.staleness = stats.staleness;
    r.lr = static_cast<float>(push_lr);
    r.loss = loss_value;
    r.samples = n;
    r.correct = logits.argmax(1).eq(labels).sum().item<int64_t>();
    totals_.add(r);
    r.step = steps_before_ + totals_.steps;
    loss_sum += loss_value * static_cast<double>(n);
    correct += r.correct;
    seen += n;
    auto s = metrics_->append(metricsLine(r, config_.rank));
    // On disk at once (one write of one line per step): a rank stopped by a signal, as the
    // launcher stops the others when one fails, loses no finished step's line.
    if (s.ok()) s = metrics_->flush();
    if (!s.ok()) return s;
    ++state_.step;
    state_.loss = loss_sum / static_cast<double>(seen);
    state_.train_accuracy = static_cast<double>(correct) / static_cast<double>(seen);
    state_.lr = worker_->lr();
    state_.bytes_up = totals_.bytes_up;
    state_.bytes_down = totals_.bytes_down;
    showEvaluations();
    progress_->update(state_);
  }
  totals_.train_seconds += secondsSince(epoch_start);
  epochs_done_ = epoch + (state_.steps_in_epoch > 0 ? static_cast<double>(state_.step) /
                                                          static_cast<double>(state_.steps_in_epoch)
                                                    : 1.0);
  progress_->endEpoch(state_);
  logLine(config_.rank,
          absl::StrFormat("epoch %d: %d steps in %.1fs, loss %.4f, train accuracy %.2f%%, sent %s",
                          epoch + 1, state_.step, secondsSince(epoch_start), state_.loss,
                          100 * state_.train_accuracy, formatBytes(totals_.bytes_up)));
  // A worker stopped at its divergence keeps its BN statistics, which are the diverged
  // model's, to itself.
  if (!stopped_) {
    if (auto s = worker_->syncBuffers(); !s.ok()) return s;
  }
  if (state_.step == state_.steps_in_epoch) {  // not an epoch cut short by --max-steps
    if (auto s = saveWorkerState(epoch + 1); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status WorkerRun::saveWorkerState(int epochs_done) {
  WorkerCheckpoint checkpoint;
  checkpoint.layout_fingerprint = model_->flat.fingerprint();
  checkpoint.epochs_done = static_cast<uint64_t>(epochs_done);
  checkpoint.method = config_.job.method;
  checkpoint.method_state = worker_->saveState();
  return saveWorkerCheckpoint(config_.workerCheckpointPath(), checkpoint);
}

// This worker's momentum and residuals resume with the servers only when the servers'
// checkpoint holds exactly the steps after which they were saved (the end of an epoch: a
// finished run, extended). From a checkpoint with more or fewer of its steps, the restored
// residuals would not match the model, so they start from zero instead; the log says which.
absl::Status WorkerRun::restoreWorkerState(uint64_t steps_done) {
  const std::string path = config_.workerCheckpointPath();
  auto saved = loadWorkerCheckpoint(path);
  if (absl::IsNotFound(saved.status())) {
    logLine(config_.rank, absl::StrCat("no worker checkpoint ", path,
                                       ": momentum and residuals start from zero"));
    return absl::OkStatus();
  }
  if (!saved.ok()) return saved.status();
  if (auto s = checkWorkerCheckpoint(*saved, path, config_.job.method, model_->flat.fingerprint());
      !s.ok()) {
    return s;
  }
  const uint64_t saved_at = saved->epochs_done * static_cast<uint64_t>(own_batches_);
  if (steps_done != saved_at) {
    logLine(config_.rank,
            absl::StrCat("worker checkpoint ", path, " holds the state after epoch ",
                         saved->epochs_done, ", this worker's step ", saved_at,
                         ", but the servers resume after its step ", steps_done,
                         ": momentum and residuals start from zero"));
    return absl::OkStatus();
  }
  if (auto s = worker_->loadState(saved->method_state); !s.ok()) {
    return absl::DataLossError(absl::StrCat("worker checkpoint ", path, ": ", s.message(),
                                            "; delete it to start this worker's momentum and "
                                            "residuals from zero"));
  }
  logLine(config_.rank, absl::StrCat("restored this worker's momentum and residuals after epoch ",
                                     saved->epochs_done, " from ", path));
  return absl::OkStatus();
}

void WorkerRun::showEvaluations() {
  if (!evals_) return;
  for (const nlohmann::json& row : evals_->newLines()) {
    if (!row.contains("accuracy")) continue;  // a final row naming the epoch row it equals
    state_.test_accuracy = row.value("accuracy", 0.0);
    progress_->evaluation(row.value("epoch", 0.0), state_.test_accuracy, row.value("loss", 0.0),
                          row.value("version", uint64_t{0}));
  }
}

absl::Status WorkerRun::finishRun() {
  // The report first: once this worker says goodbye, server shard 0 may write the summary.
  totals_.peak_rss_mb = peakRssMb();
  if (auto s = writeJsonFile(workerReportPath(config_.out, config_.workerIndex()), totals_.toJson());
      !s.ok()) {
    return s;
  }
  if (auto s = worker_->leave(); !s.ok()) return s;
  connected_.channel->shutdown();
  if (first()) {
    showEvaluations();
    progress_->message("training done; server shard 0 evaluates the final model and writes "
                       "the summary");
  }
  return absl::OkStatus();
}

absl::Status WorkerRun::run(bool* trained) {
  if (auto s = setUp(); !s.ok()) return s;
  *trained = true;
  for (int epoch = start_epoch_; epoch < config_.epochs && stepsLeft(); ++epoch) {
    if (auto s = trainEpoch(epoch); !s.ok()) return s;
  }
  return finishRun();
}

}  // namespace

absl::Status runWorkerRole(const DriverConfig& config, RunClock::time_point process_start,
                           bool* trained) {
  *trained = false;
  return WorkerRun(config, process_start).run(trained);
}

}  // namespace sparseps

#include "experiments/driver/evaluator.h"

#include <ATen/Parallel.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/runtime/checkpoint.h"
#include "experiments/driver/batch_norm_stats.h"
#include "experiments/driver/elapsed.h"
#include "experiments/driver/evaluate.h"

namespace sparseps {
namespace {

constexpr int64_t kEvalBatch = 256;
// How long the evaluator waits for another shard's slice of a snapshot.
constexpr auto kSliceWait = std::chrono::seconds(120);

// Training is over: the evaluator's threads (it and the OpenMP threads it started, which
// inherited its policy) leave SCHED_IDLE, so the snapshots still waiting are scored at the
// priority of any other work on the machine instead of after all of it.
void leaveIdlePriority() {
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(task.path().filename().c_str()));
    if (sched_getscheduler(tid) == SCHED_IDLE) {
      sched_param normal{};
      sched_setscheduler(tid, SCHED_OTHER, &normal);
    }
  }
}

}  // namespace

std::string snapshotSlicePath(const std::string& out, const Snapshot& snapshot, int shard) {
  return absl::StrCat(out, "/snapshots/",
                      snapshot.final ? std::string("final") : absl::StrCat(snapshot.index),
                      ".shard", shard);
}

absl::StatusOr<std::unique_ptr<Evaluator>> Evaluator::create(
    const DriverConfig& config, const Dataset& dataset,
    std::function<void(const std::string&)> log) {
  auto model = buildModel(config, dataset);
  if (!model.ok()) return model.status();
  auto plan = ShardPlan::make(model->specs, config.servers);
  if (!plan.ok()) return plan.status();
  auto evals = JsonLinesWriter::open(config.out + "/eval.jsonl");
  if (!evals.ok()) return evals.status();
  return std::unique_ptr<Evaluator>(new Evaluator(config, dataset, std::move(*model),
                                                  std::move(*plan), std::move(*evals),
                                                  std::move(log)));
}

Evaluator::Evaluator(const DriverConfig& config, const Dataset& dataset, ClassifierModel model,
                     ShardPlan plan, JsonLinesWriter evals,
                     std::function<void(const std::string&)> log)
    : config_(config),
      dataset_(dataset),
      model_(std::move(model)),
      plan_(std::move(plan)),
      evals_(std::move(evals)),
      log_(std::move(log)),
      queue_(config.out + "/snapshots", kInMemory, log_),
      thread_([this] { run(); }) {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.adoptLeftOver(static_cast<double>(pushesPerEpoch(config, dataset))) > 0) {
    cv_.notify_all();
  }
}

Evaluator::~Evaluator() {
  if (thread_.joinable()) (void)finish();
}

void Evaluator::submit(Snapshot snapshot) {
  std::unique_lock<std::mutex> lock(mu_);
  if (config_.virtualClock()) {
    // Simulated time does not pass while the job waits here; no snapshot goes to disk.
    cv_.wait(lock, [this] { return queue_.inMemory() < kInMemory; });
  }
  queue_.push(std::move(snapshot));
  cv_.notify_all();
}

absl::StatusOr<EvalRow> Evaluator::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  leaveIdlePriority();
  if (thread_.joinable()) thread_.join();
  if (!last_) return absl::NotFoundError("no snapshot of the servers' model was evaluated");
  return *last_;
}

void Evaluator::run() {
  // The lowest priority for this thread alone: training goes first, evaluation takes the
  // cycles it leaves (and whatever is left to do when training ends). SCHED_IDLE where the
  // kernel allows it, else nice 19. Either holds only among threads of one scheduling
  // group: experiments/run keeps every rank of a job in one session for that.
  const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
  sched_param idle{};
  if (sched_setscheduler(tid, SCHED_IDLE, &idle) != 0) setpriority(PRIO_PROCESS, tid, 19);
  // Every core, at that priority (OpenMP's threads inherit it): while workers train it gets
  // what they leave, and once they are done it has the machine. A virtual-time job keeps
  // one thread, so the step times it measures on the other core are not disturbed.
  if (!config_.virtualClock()) {
    at::set_num_threads(machineCores());
  }
  for (;;) {
    Snapshot snapshot;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      std::optional<absl::StatusOr<Snapshot>> next = queue_.pop();
      if (!next) return;
      cv_.notify_all();  // a virtual job's submit may wait for room
      if (!next->ok()) {
        log_(std::string(next->status().message()));
        continue;
      }
      snapshot = std::move(**next);
    }
    try {
      // The model just scored: say it is the last, unless the scores read the workers' BN
      // statistics and those changed since (the workers' last uploads follow the snapshot
      // of the epoch that ends the run).
      if (snapshot.version == last_version_ &&
          !(scoresReadWorkersStatistics() && snapshot.buffers != last_buffers_)) {
        if (absl::Status s = markFinal(snapshot); !s.ok()) log_(std::string(s.message()));
        continue;
      }
      if (absl::Status s = evaluate(snapshot); !s.ok()) {
        log_(absl::StrCat("evaluation after ", snapshot.epoch, " epochs failed: ", s.message()));
      }
    } catch (const std::exception& e) {  // LibTorch errors
      log_(absl::StrCat("evaluation after ", snapshot.epoch, " epochs failed: ", e.what()));
    }
  }
}

bool Evaluator::assemble(const Snapshot& snapshot) {
  absl::Span<float> params = model_.flat.params();
  std::copy(snapshot.params.begin(), snapshot.params.end(), params.begin());
  if (snapshot.buffers.size() == model_.flat.buffers().size()) {
    std::copy(snapshot.buffers.begin(), snapshot.buffers.end(), model_.flat.buffers().begin());
  }
  if (snapshot.params.size() == params.size()) return true;  // the whole model already
  for (int s = 1; s < plan_.numShards(); ++s) {
    const std::string path = snapshotSlicePath(config_.out, snapshot, s);
    const auto deadline = RunClock::now() + kSliceWait;
    absl::StatusOr<ShardCheckpoint> slice = loadCheckpoint(path);
    while (!slice.ok() && RunClock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      slice = loadCheckpoint(path);
    }
    const Shard& shard = plan_.shard(s);
    if (!slice.ok() || slice->model.size() != shard.numel) {
      log_(absl::StrCat("evaluation after ", snapshot.epoch, " epochs skipped: shard ", s,
                        "'s slice ", path, " is ", slice.ok() ? "the wrong size" : "missing",
                        " (shards on other machines must share the run directory)"));
      return false;
    }
    std::copy(slice->model.begin(), slice->model.end(), params.begin() + shard.offset);
    std::remove(path.c_str());
  }
  return true;
}

bool Evaluator::scoresReadWorkersStatistics() const {
  return config_.eval_workers_bn ||
         config_.evalBnBatches(config_.evalExamples(dataset_.size(Split::kTest))) == 0;
}

absl::Status Evaluator::markFinal(const Snapshot& snapshot) {
  if (!snapshot.final || !last_ || last_row_final_) return absl::OkStatus();
  nlohmann::json row = {{"epoch", snapshot.epoch},
                         {"version", snapshot.version},
                         {"pushes", snapshot.pushes},
                         {"final", true},
                         {"same_as_epoch", last_->epoch}};
  if (std::isfinite(snapshot.seconds)) row["time"] = snapshot.seconds;
  absl::Status s = evals_.append(row);
  if (s.ok()) s = evals_.flush();
  if (s.ok()) last_row_final_ = true;
  return s;
}

absl::Status Evaluator::evaluate(const Snapshot& snapshot) {
  const auto start = RunClock::now();
  if (!assemble(snapshot)) return absl::OkStatus();
  const int64_t examples = config_.evalExamples(dataset_.size(Split::kTest));
  const int64_t wanted = config_.evalBnBatches(examples);
  // The same weights with the statistics the workers pushed (assemble put them in), before
  // they are recomputed. A snapshot without them (no worker pushed any yet) has no such score.
  std::optional<EvalResult> with_workers_bn;
  if (config_.eval_workers_bn && wanted > 0 && !snapshot.buffers.empty() &&
      snapshot.buffers.size() == model_.flat.buffers().size()) {
    auto result = sparseps::evaluate(*model_.net, dataset_, kEvalBatch, examples);
    if (!result.ok()) return result.status();
    with_workers_bn = *result;
  }
  int64_t bn_batches = 0;
  if (wanted > 0) {
    auto used = recomputeBatchNormStatistics(
        *model_.net,
        dataset_.trainBatches(0, 1, static_cast<int>(snapshot.epoch), config_.batch_size),
        wanted);
    if (!used.ok()) return used.status();
    bn_batches = *used;
  }
  auto result = sparseps::evaluate(*model_.net, dataset_, kEvalBatch, examples);
  if (!result.ok()) return result.status();
  const double took = secondsSince(start);
  nlohmann::json row = {{"epoch", snapshot.epoch},
                        {"version", snapshot.version},
                        {"pushes", snapshot.pushes},
                        {"final", snapshot.final},
                        {"accuracy", result->accuracy},
                        {"loss", result->loss},
                        {"examples", result->examples},
                        {"bn_batches", bn_batches}};
  if (with_workers_bn) {
    row["workers_bn_accuracy"] = with_workers_bn->accuracy;
    row["workers_bn_loss"] = with_workers_bn->loss;
  }
  // A snapshot an earlier process left waiting has no time (SnapshotQueue::adoptLeftOver).
  if (std::isfinite(snapshot.seconds)) row["time"] = snapshot.seconds;
  auto s = evals_.append(row);
  if (s.ok()) s = evals_.flush();
  if (!s.ok()) return s;
  last_ = EvalRow{snapshot.epoch, snapshot.version, result->accuracy, result->loss};
  last_version_ = snapshot.version;
  last_buffers_ = snapshot.buffers;
  last_row_final_ = snapshot.final;
  const std::string workers =
      with_workers_bn ? absl::StrFormat(" (with the workers' BN statistics: accuracy %.4f "
                                        "loss %.4f)", with_workers_bn->accuracy,
                                        with_workers_bn->loss)
                      : "";
  log_(absl::StrFormat("evaluation after %.2f epochs (server version %d, %d test examples): "
                       "accuracy %.4f loss %.4f%s, %.1fs", snapshot.epoch, snapshot.version,
                       result->examples, result->accuracy, result->loss, workers, took));
  return absl::OkStatus();
}

}  // namespace sparseps

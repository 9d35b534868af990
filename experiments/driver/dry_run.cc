#include "experiments/driver/dry_run.h"

#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/runtime/job.h"
#include "core/wire/wire.h"
#include "experiments/driver/elapsed.h"
#include "experiments/driver/rank_setup.h"
#include "experiments/driver/summary.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The machine's available memory (MemAvailable), in MiB; 0 when unknown.
double availableMiB() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib / 1024.0;
  }
  return 0;
}

std::string mib(double value) {
  if (value >= 1024) return absl::StrFormat("%.1f GiB", value / 1024);
  return absl::StrFormat(value >= 10 ? "%.0f MiB" : "%.2f MiB", value);
}

// One push from every worker and a reply to each, through the method's rules on the real
// model and gradient; the bytes each encodes to, and the state the rules keep.
struct MethodCheck {
  size_t push_bytes = 0, reply_bytes = 0;
  double worker_state_mib = 0;
  double server_state_mib = 0;            // with one worker
  double server_state_per_worker_mib = 0; // each further worker
};

absl::StatusOr<MethodCheck> checkMethod(const DriverConfig& config, ClassifierModel& model,
                                        double pushes_per_epoch) {
  const MethodRegistry& methods = methodRegistry();
  auto made = makeJobSpec(config, pushes_per_epoch);
  if (!made.ok()) return made.status();
  JobSpec job = *std::move(made);
  job.num_servers = 1;  // the state of every shard together
  auto worker_job = resolveJob(job, methods, model.specs);
  if (!worker_job.ok()) return worker_job.status();
  auto worker = worker_job->method().makeWorker(model.specs, worker_job->forRank(1));
  std::vector<float> W(model.flat.params().begin(), model.flat.params().end());
  MethodCheck check;
  // State is per worker on the server: measure it with one and two, and extrapolate, so
  // the check never allocates what a 64-worker server would.
  for (int workers : {1, 2}) {
    job.num_workers = workers;
    auto server_job = resolveJob(job, methods, model.specs);
    if (!server_job.ok()) return server_job.status();
    auto server = server_job->method().makeServer(model.specs, server_job->forRank(0));
    for (int k = 0; k < workers; ++k) server->onWorkerStart(k);
    Message push, reply;
    for (int k = 0; k < workers; ++k) {  // one worker rule stands for each worker in turn
      worker->makePush(model.flat.grads(), model.flat.params(), StepContext{}, &push);
      server->applyPush(k, push, 1.0f, absl::MakeSpan(W));
      server->makeReply(k, W, &reply);
      worker->applyReply(reply, model.flat.params());
    }
    auto push_bytes = encodeMessage(MessageHeader{}, push, job.encode);
    if (!push_bytes.ok()) return push_bytes.status();
    auto reply_bytes = encodeMessage(MessageHeader{}, reply, job.encode);
    if (!reply_bytes.ok()) return reply_bytes.status();
    check.push_bytes = push_bytes->size();
    check.reply_bytes = reply_bytes->size();
    const double state = static_cast<double>(server->saveState().size()) / kMiB;
    if (workers == 1) {
      check.server_state_mib = state;
    } else {
      check.server_state_per_worker_mib = std::max(0.0, state - check.server_state_mib);
    }
  }
  check.worker_state_mib = static_cast<double>(worker->saveState().size()) / kMiB;
  return check;
}

}  // namespace

absl::Status runDryRun(const DriverConfig& config) {
  std::printf("resolved flags (what config.json records):\n%s\n", config.toJson().dump(2).c_str());
  std::fflush(stdout);

  // Data: opened as every rank opens it, then every example read.
  auto start = RunClock::now();
  auto dataset = loadDataset(config);
  if (!dataset.ok()) return dataset.status();
  const Dataset& data = **dataset;
  auto footprint = data.checkAll();
  if (!footprint.ok()) return footprint.status();
  const double train_cache = static_cast<double>(footprint->train_bytes) / kMiB;
  const double test_cache = static_cast<double>(footprint->test_bytes) / kMiB;
  std::printf("data: %s\n  every example of both splits read in %.1f s", data.description().c_str(),
              secondsSince(start));
  if (footprint->train_bytes > 0) {
    std::printf("; decoded and cached they take %s (train) and %s (test)", mib(train_cache).c_str(),
                mib(test_cache).c_str());
  }
  std::printf("\n");
  std::fflush(stdout);

  // Model: one training step on a real batch and one evaluation batch, as the ranks run them.
  torch::manual_seed(config.job.seed);
  auto model = buildModel(config, data);
  if (!model.ok()) return model.status();
  const double params_mib = static_cast<double>(model->flat.params().size()) * 4 / kMiB;
  Batch batch;
  BatchIterator train = data.trainBatches(0, config.numWorkers(), 0, config.batch_size);
  if (auto more = train.next(&batch); !more.ok() || !*more) {
    return more.ok() ? absl::FailedPreconditionError(absl::StrCat(
                           "--world-size=", config.world_size, ": worker 0's shard of ",
                           data.size(Split::kTrain), " training examples is empty"))
                     : more.status();
  }
  model->net->train();
  start = RunClock::now();
  const torch::Tensor loss =
      torch::nn::functional::cross_entropy(model->net->forward(batch.images), batch.labels);
  loss.backward();
  const double step_seconds = secondsSince(start);
  const double loss_value = loss.item<double>();
  if (!std::isfinite(loss_value)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the first training batch gives a non-finite loss (", loss_value, ")"));
  }
  const double worker_peak = peakRssMb();
  {
    torch::NoGradGuard no_grad;
    model->net->eval();
    BatchIterator test = data.testBatches(256);  // the evaluator's batch
    if (auto more = test.next(&batch); !more.ok()) return more.status();
    (void)model->net->forward(batch.images);
    model->net->train();
  }
  const double eval_peak = peakRssMb();
  std::printf("model: %s, %zu parameters (%s); one forward/backward of %d examples: %.2f s on "
              "%d thread(s), loss %.3f\n",
              config.model.c_str(), model->flat.params().size(), mib(params_mib).c_str(),
              config.batch_size, step_seconds, at::get_num_threads(), loss_value);
  std::fflush(stdout);

  // Method: its rules on this model's layout and gradient.
  const int64_t pushes_per_epoch = pushesPerEpoch(config, data);
  auto method = checkMethod(config, *model, static_cast<double>(pushes_per_epoch));
  if (!method.ok()) return method.status();
  const int workers = config.numWorkers();
  const double server_state =
      method->server_state_mib + (workers - 1) * method->server_state_per_worker_mib;
  std::printf("method: %s, a push (%zu bytes) and a worker's first reply (%zu bytes) through its "
              "rules; state: worker %s, servers %s for %d workers\n",
              config.job.method.c_str(), method->push_bytes, method->reply_bytes,
              mib(method->worker_state_mib).c_str(), mib(server_state).c_str(), workers);

  // Memory: this process's measured peaks stand for what every rank loads (libraries, data,
  // model, the pass itself); the rest is added: method state, the part of Imagenette's
  // cache each rank fills (a worker its shard; the evaluator the test examples it scores
  // and the training examples of its BN statistics), a dense message each way per link.
  const int64_t test_size = data.size(Split::kTest);
  const int64_t eval_examples = config.evalExamples(test_size);
  const double bn_fraction = std::min(
      1.0, static_cast<double>(config.evalBnBatches(eval_examples) * config.batch_size) /
               static_cast<double>(data.size(Split::kTrain)));
  const double message = params_mib;
  const double worker =
      worker_peak + method->worker_state_mib + train_cache / workers + 2 * message;
  const double server = eval_peak + server_state +
                        test_cache * eval_examples / static_cast<double>(test_size) +
                        train_cache * bn_fraction + 2 * message * workers;
  const double job = workers * worker + server;
  std::printf("memory, estimated per process: worker %s (measured peak after one step %s + "
              "method state + its shard of the data cache + message buffers); server shard 0 %s "
              "(with its evaluator and every worker's state and buffers)\n",
              mib(worker).c_str(), mib(worker_peak).c_str(), mib(server).c_str());
  if (!config.multiMachine()) {
    const double available = availableMiB();
    std::printf("  the whole job on this machine: %s of %s available\n", mib(job).c_str(),
                available > 0 ? mib(available).c_str() : "unknown");
    if (available > 0 && job > available) {
      std::printf("warning: the job may not fit in memory: lower --batch-size, --image-size "
                  "(imagenette) or --world-size\n");
    }
  }
  const std::string cap =
      config.max_steps > 0 ? absl::StrCat(", at most ", config.max_steps, " steps per worker") : "";
  std::printf("dry run passed: %lld pushes per epoch, %d epoch(s)%s\n",
              static_cast<long long>(pushes_per_epoch), config.epochs, cap.c_str());
  return absl::OkStatus();
}

}  // namespace sparseps

#include "core/torch/ps_rank.h"

#include <cmath>

#include <torch/nn/module.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/net/connect.h"
#include "core/runtime/job.h"
#include "core/torch/cuda_install.h"
#include "core/torch/tcp_store.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

FlatModel::NamedTensors namedParameters(const torch::nn::Module& module) {
  FlatModel::NamedTensors out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    out.emplace_back(item.key(), item.value());
  }
  return out;
}

FlatModel::NamedTensors namedBuffers(const torch::nn::Module& module) {
  FlatModel::NamedTensors out;
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    out.emplace_back(item.key(), item.value());
  }
  return out;
}

absl::StatusOr<RankModel> flattenModel(const FlatModel::NamedTensors& params,
                                       const FlatModel::NamedTensors& buffers) {
  if (params.empty()) return absl::InvalidArgumentError("the model has no parameters to train");
  auto flat = FlatModel::create(params, buffers);
  if (!flat.ok()) return flat.status();
  return RankModel(std::move(*flat));
}

absl::StatusOr<StoredConnection> connect(const RankOptions& options, const RankModel& model) {
  auto connect_options = options.connectOptions(model.flat);
  if (!connect_options.ok()) return connect_options.status();
  return connectThroughStore(std::move(*connect_options));
}

absl::StatusOr<JobSpec> checkedJob(const RankOptions& options, bool want_server) {
  if (options.isServer() != want_server) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", options.rank, " is a ", options.isServer() ? "server" : "worker",
        " rank (ranks 0..", options.num_servers - 1, " serve): ",
        options.isServer() ? "serve its shard there" : "connect a worker there"));
  }
  return options.jobSpec(methodRegistry());
}

// The servers' model and buffers into `model` through `receive`, which writes host spans:
// directly, or through host copies for a model on a GPU.
template <typename Receive>
absl::StatusOr<ServerProgress> receiveInto(FlatModel& model, Receive&& receive) {
  if (!model.onDevice()) return receive(model.params(), model.buffers());
  std::vector<float> params(model.params().size()), buffers(model.buffers().size());
  auto progress = receive(absl::MakeSpan(params), absl::MakeSpan(buffers));
  if (!progress.ok()) return progress;
  if (auto s = model.writeParams(params); !s.ok()) return s;
  if (auto s = model.writeBuffers(buffers); !s.ok()) return s;
  return progress;
}

// The model's BN buffers to the servers (from a host copy for a model on a GPU).
absl::Status sendBuffersOf(const FlatModel& model, WorkerClient& client) {
  if (!model.onDevice()) return client.sendBuffers(model.buffers());
  std::vector<float> host(model.buffers().size());
  if (auto s = model.readBuffers(absl::MakeSpan(host)); !s.ok()) return s;
  return client.sendBuffers(host);
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerClient>> makeModelWorkerClient(
    Endpoint& endpoint, const JobSpec& job, const MethodRegistry& methods,
    const FlatModel& model, const SegmentSpecs& specs) {
  const size_t num_buffers = model.buffers().size();
  if (!model.onDevice()) return makeWorkerClient(endpoint, job, methods, specs, num_buffers);
  auto ops = gpuVectorOps(model.deviceIndex());
  if (!ops.ok()) return ops.status();
  return makeWorkerClient(endpoint, job, methods, specs, num_buffers, *ops);
}

absl::StatusOr<StoredConnection> connectThroughStore(ConnectOptions options) {
  StoredConnection connected;
  if (options.rendezvous.store_dir.empty()) {
    auto store = makeTcpStore(options.rendezvous);
    if (!store.ok()) return store.status();
    connected.store = std::move(*store);
    options.store = connected.store.get();
  }
  auto connection = connectRank(std::move(options));
  if (!connection.ok()) return connection.status();
  connected.channel = std::move(*connection);
  return connected;
}

struct PsWorker::Connection {
  JobSpec job;
  RankModel model;
  StoredConnection connected;
};

PsWorker::PsWorker(FlatModel& model, std::unique_ptr<WorkerClient> client)
    : model_(model), client_(std::move(client)) {}

PsWorker::~PsWorker() = default;

absl::StatusOr<std::unique_ptr<PsWorker>> PsWorker::start(FlatModel& model,
                                                          std::unique_ptr<WorkerClient> client) {
  if (!client) return absl::InvalidArgumentError("PsWorker::start: null client");
  auto started = receiveInto(model, [&client](absl::Span<float> params, absl::Span<float> buffers) {
    return client->start(params, buffers);
  });
  if (!started.ok()) return started.status();
  auto worker = std::unique_ptr<PsWorker>(new PsWorker(model, std::move(client)));
  worker->initial_ = *started;
  return worker;
}

absl::StatusOr<std::unique_ptr<PsWorker>> PsWorker::connect(
    const RankOptions& options, const std::shared_ptr<torch::nn::Module>& module) {
  if (!module) return absl::InvalidArgumentError("PsWorker::connect: null module");
  return connect(options, namedParameters(*module), namedBuffers(*module));
}

absl::StatusOr<std::unique_ptr<PsWorker>> PsWorker::connect(
    const RankOptions& options, const FlatModel::NamedTensors& params,
    const FlatModel::NamedTensors& buffers) {
  auto job = checkedJob(options, /*want_server=*/false);
  if (!job.ok()) return job.status();
  auto model = flattenModel(params, buffers);  // checked before anything is re-pointed
  if (!model.ok()) return model.status();
  auto owned = std::unique_ptr<Connection>(
      new Connection{std::move(*job), std::move(*model), {}});
  auto channel = sparseps::connect(options, owned->model);
  if (!channel.ok()) return channel.status();
  owned->connected = std::move(*channel);
  auto client = makeModelWorkerClient(*owned->connected.channel, owned->job, methodRegistry(),
                                      owned->model.flat, owned->model.specs);
  if (!client.ok()) return client.status();
  auto worker = start(owned->model.flat, std::move(*client));
  if (!worker.ok()) return worker.status();
  (*worker)->connection_ = std::move(owned);
  return worker;
}

absl::Status PsWorker::checkInJob(const char* call) const {
  if (!left_) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(call, " after finish() or leave(): this worker has left the job"));
}

void PsWorker::zeroGrad() { model_.zeroGrad(); }

absl::Status PsWorker::step(int epoch, std::optional<float> lr) {
  if (auto s = checkInJob("step()"); !s.ok()) return s;
  if (lr) {
    if (!std::isfinite(*lr) || *lr < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "step(): learning rate ", *lr, " is not a finite number >= 0"));
    }
    client_->setLr(*lr);
  }
  model_.gatherGrads();
  last_ = StepStats{};
  return client_->step(model_.grads(), model_.params(), epoch, &last_);
}

absl::Status PsWorker::syncBuffers() {
  if (auto s = checkInJob("syncBuffers()"); !s.ok()) return s;
  return sendBuffersOf(model_, *client_);
}

absl::Status PsWorker::pullModel(absl::Span<float> params, absl::Span<float> buffers) {
  if (auto s = checkInJob("pullModel()"); !s.ok()) return s;
  if (params.size() != model_.params().size() || buffers.size() != model_.buffers().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pullModel: spans of ", params.size(), " and ", buffers.size(), " floats; the model has ",
        model_.params().size(), " parameters and ", model_.buffers().size(), " buffer floats"));
  }
  return client_->pullModel(params, buffers).status();
}

absl::Status PsWorker::finish() {
  if (left_) return absl::OkStatus();
  absl::Status s;
  if (!model_.buffers().empty()) s = sendBuffersOf(model_, *client_);
  if (s.ok()) {
    s = receiveInto(model_, [this](absl::Span<float> params, absl::Span<float> buffers) {
          return client_->pullModel(params, buffers);
        }).status();
  }
  if (s.ok()) s = leave();
  return s;
}

absl::Status PsWorker::leave() {
  if (left_) return absl::OkStatus();
  absl::Status s = client_->finish();
  if (s.ok()) left_ = true;
  return s;
}

float PsWorker::lr() const { return client_->lr(); }
uint64_t PsWorker::steps() const { return client_->steps(); }
std::string PsWorker::saveState() const { return client_->saveRuleState(); }
absl::Status PsWorker::loadState(const std::string& bytes) { return client_->loadRuleState(bytes); }

absl::StatusOr<ShardStats> serveShard(const RankOptions& options,
                                       const std::shared_ptr<torch::nn::Module>& module) {
  if (!module) return absl::InvalidArgumentError("serveShard: null module");
  return serveShard(options, namedParameters(*module), namedBuffers(*module));
}

absl::StatusOr<ShardStats> serveShard(const RankOptions& options,
                                       const FlatModel::NamedTensors& params,
                                       const FlatModel::NamedTensors& buffers) {
  auto job = checkedJob(options, /*want_server=*/true);
  if (!job.ok()) return job.status();
  auto model = flattenModel(params, buffers);
  if (!model.ok()) return model.status();
  auto connected = connect(options, *model);
  if (!connected.ok()) return connected.status();
  auto stats =
      runShard(*connected->channel, *job, methodRegistry(), model->specs, model->flat.params(),
                     model->flat.buffers(), model->flat.fingerprint());
  connected->channel->shutdown();
  return stats;
}

}  // namespace sparseps

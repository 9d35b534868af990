#include "core/torch/ps_rank.h"

#include <torch/nn/module.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/net/connect.h"
#include "core/runtime/job.h"
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

struct RankModel {
  FlatModel flat;
  SegmentSpecs specs;
  // Parameters and float buffers both: a worker built without the module's BN buffers is
  // told at connect time, not at the first sync.
  uint64_t fingerprint = 0;
};

absl::StatusOr<RankModel> flattenModel(const FlatModel::NamedTensors& params,
                                       const FlatModel::NamedTensors& buffers) {
  if (params.empty()) return absl::InvalidArgumentError("the model has no parameters to train");
  auto flat = FlatModel::create(params, buffers);
  if (!flat.ok()) return flat.status();
  RankModel model{std::move(*flat), {}, 0};
  model.specs = toSegmentSpecs(model.flat.paramLayout());
  // Mixed so that swapping the two layouts changes the result.
  model.fingerprint = model.flat.paramLayout().fingerprint() ^
                      (model.flat.bufferLayout().fingerprint() * 0x9e3779b97f4a7c15ULL);
  return model;
}

absl::StatusOr<StoredConnection> connect(const RankOptions& options, const RankModel& model) {
  auto connect_options = options.connectOptions(model.fingerprint, model.flat.params().size(),
                                                model.specs.size(), model.flat.buffers().size());
  if (!connect_options.ok()) return connect_options.status();
  return connectThroughStore(std::move(*connect_options));
}

absl::StatusOr<JobSpec> checkedJob(const RankOptions& options, MethodRegistry& methods,
                                   bool want_server) {
  if (options.isServer() != want_server) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", options.rank, " is a ", options.isServer() ? "server" : "worker",
        " rank (ranks 0..", options.num_servers - 1, " serve): ",
        options.isServer() ? "serve its shard there" : "connect a worker there"));
  }
  if (auto s = registerBuiltinMethods(methods); !s.ok()) return s;
  return options.jobSpec(methods);
}

}  // namespace

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
  connected.connection = std::move(*connection);
  return connected;
}

struct PsWorker::State {
  MethodRegistry methods;
  JobSpec job;
  RankModel model;
  StoredConnection connection;
  std::unique_ptr<WorkerClient> client;

  ~State() {
    client.reset();  // before the connection it uses
    if (connection.connection) connection.connection->close();
  }
};

PsWorker::PsWorker(std::unique_ptr<State> state) : state_(std::move(state)) {}

PsWorker::~PsWorker() = default;

absl::StatusOr<std::unique_ptr<PsWorker>> PsWorker::connect(
    const RankOptions& options, const std::shared_ptr<torch::nn::Module>& module) {
  if (!module) return absl::InvalidArgumentError("PsWorker::connect: null module");
  return connect(options, namedParameters(*module), namedBuffers(*module));
}

absl::StatusOr<std::unique_ptr<PsWorker>> PsWorker::connect(
    const RankOptions& options, const FlatModel::NamedTensors& params,
    const FlatModel::NamedTensors& buffers) {
  MethodRegistry methods;
  auto job = checkedJob(options, methods, /*want_server=*/false);
  if (!job.ok()) return job.status();
  auto model = flattenModel(params, buffers);  // checked before anything is re-pointed
  if (!model.ok()) return model.status();
  auto state = std::unique_ptr<State>(
      new State{std::move(methods), std::move(*job), std::move(*model), {}, nullptr});
  auto connection = sparseps::connect(options, state->model);
  if (!connection.ok()) return connection.status();
  state->connection = std::move(*connection);
  auto client = makeWorkerClient(*state->connection.connection->endpoint, state->job,
                                 state->methods, state->model.specs,
                                 state->model.flat.buffers().size());
  if (!client.ok()) return client.status();
  state->client = std::move(*client);
  auto started = state->client->start(state->model.flat.params(), state->model.flat.buffers());
  if (!started.ok()) return started.status();
  auto worker = std::unique_ptr<PsWorker>(new PsWorker(std::move(state)));
  worker->initial_version_ = started->version;
  return worker;
}

absl::Status PsWorker::checkInJob(const char* call) const {
  if (!finished_) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(call, " after finish(): this worker has left the job"));
}

void PsWorker::zeroGrad() { state_->model.flat.zeroGrad(); }

absl::Status PsWorker::step(int epoch) {
  if (auto s = checkInJob("step()"); !s.ok()) return s;
  FlatModel& flat = state_->model.flat;
  flat.gatherGrads();
  last_ = StepStats{};
  return state_->client->step(flat.grads(), flat.params(), epoch, &last_);
}

absl::Status PsWorker::syncBuffers() {
  if (auto s = checkInJob("syncBuffers()"); !s.ok()) return s;
  return state_->client->sendBuffers(state_->model.flat.buffers());
}

absl::Status PsWorker::pullModel(absl::Span<float> params, absl::Span<float> buffers) {
  if (auto s = checkInJob("pullModel()"); !s.ok()) return s;
  const FlatModel& flat = state_->model.flat;
  if (params.size() != flat.params().size() || buffers.size() != flat.buffers().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pullModel: spans of ", params.size(), " and ", buffers.size(), " floats; the model has ",
        flat.params().size(), " parameters and ", flat.buffers().size(), " buffer floats"));
  }
  return state_->client->pullModel(params, buffers).status();
}

absl::Status PsWorker::finish() {
  if (finished_) return absl::OkStatus();
  FlatModel& flat = state_->model.flat;
  WorkerClient& client = *state_->client;
  absl::Status s;
  if (!flat.buffers().empty()) s = client.sendBuffers(flat.buffers());
  if (s.ok()) s = client.pullModel(flat.params(), flat.buffers()).status();
  if (s.ok()) s = client.finish();
  if (s.ok()) finished_ = true;
  return s;
}

float PsWorker::lr() const { return state_->client->lr(); }
uint64_t PsWorker::steps() const { return state_->client->steps(); }
const FlatModel& PsWorker::model() const { return state_->model.flat; }
std::string PsWorker::saveState() const { return state_->client->saveRuleState(); }
absl::Status PsWorker::loadState(const std::string& bytes) {
  return state_->client->loadRuleState(bytes);
}

absl::StatusOr<ServerStats> serveShard(const RankOptions& options,
                                       const std::shared_ptr<torch::nn::Module>& module) {
  if (!module) return absl::InvalidArgumentError("serveShard: null module");
  return serveShard(options, namedParameters(*module), namedBuffers(*module));
}

absl::StatusOr<ServerStats> serveShard(const RankOptions& options,
                                       const FlatModel::NamedTensors& params,
                                       const FlatModel::NamedTensors& buffers) {
  MethodRegistry methods;
  auto job = checkedJob(options, methods, /*want_server=*/true);
  if (!job.ok()) return job.status();
  auto model = flattenModel(params, buffers);
  if (!model.ok()) return model.status();
  auto connected = connect(options, *model);
  if (!connected.ok()) return connected.status();
  auto stats = runServerShard(*connected->connection->endpoint, *job, methods, model->specs,
                              model->flat.params(), model->flat.buffers(), model->fingerprint);
  connected->connection->close();
  return stats;
}

}  // namespace sparseps

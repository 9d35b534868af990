#pragma once
// One call per rank: a worker or a server shard of a job, from a LibTorch model and a
// RankOptions. It flattens the model (its parameters become views into the flat buffer,
// FlatModel), meets the other ranks (a FileStore, or a TCP store at master_addr), shakes
// hands (the layout fingerprint covers the parameters and the float buffers) and starts
// the role. A worker rank:
//
//   auto worker = sparseps::PsWorker::connect(options, net).value();
//   for (auto& batch : *loader) {
//     worker->zeroGrad();
//     torch::nn::functional::cross_entropy(net->forward(batch.data), batch.target).backward();
//     worker->step().IgnoreError();  // or check it: a dead server is an error here
//   }
//   worker->finish();
//
// and a server rank: sparseps::serveShard(options, net). The Python package is a thin
// face over these two.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/net/connect.h"
#include "core/torch/flat_model.h"
#include "core/torch/rank_options.h"
#include "core/runtime/shard_loop.h"
#include "core/runtime/worker_client.h"
#include "optim/method_registry.h"
#include "transport/endpoint.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace sparseps {

// A rank's channel and the TCP store it met through, if any: rank 0's store must outlive
// every other rank's rendezvous, so it lives as long as the channel.
struct StoredConnection {
  std::shared_ptr<KeyValueStore> store;
  std::unique_ptr<Channel> channel;
};

// connectRank through a FileStore in options.rendezvous.store_dir or, when that is empty,
// the TCP store at master_addr:master_port (core/torch/tcp_store.h). Both the one-call API
// below and the experiment driver meet this way.
absl::StatusOr<StoredConnection> connectThroughStore(ConnectOptions options);

// The worker client of a flat model: the method's worker rule on the model's memory, host
// or GPU (then with the CUDA kernels installed: core/torch/cuda_install.h; an error in a
// build without them, or for a method whose rule runs on host memory only).
absl::StatusOr<std::unique_ptr<WorkerClient>> makeModelWorkerClient(
    Endpoint& endpoint, const JobSpec& job, const MethodRegistry& methods,
    const FlatModel& model, const SegmentSpecs& specs);

// A worker of the job: the parameter server as the optimizer of a LibTorch model whose
// parameters and gradients are views into a FlatModel. step() pushes the gradient that
// backward() left and writes the servers' reply into the parameters.
class PsWorker {
 public:
  // Connects and loads the servers' initial model into the module's parameters and float
  // buffers. Blocks until every rank has met (options.connect_timeout_s at most).
  static absl::StatusOr<std::unique_ptr<PsWorker>> connect(
      const RankOptions& options, const std::shared_ptr<torch::nn::Module>& module);
  static absl::StatusOr<std::unique_ptr<PsWorker>> connect(const RankOptions& options,
                                                           const FlatModel::NamedTensors& params,
                                                           const FlatModel::NamedTensors& buffers);
  // A worker over a client its caller connected (the experiment driver, which builds its
  // job its own way): receives the initial model into `model`, which must outlive the
  // worker, as must the client's endpoint.
  static absl::StatusOr<std::unique_ptr<PsWorker>> start(FlatModel& model,
                                                         std::unique_ptr<WorkerClient> client);
  // Without finish() or leave(), the servers drop this worker when its channel closes.
  ~PsWorker();

  void zeroGrad();
  // Pushes the gradient the last backward() left (gatherGrads: also one made after a
  // reset to undefined), waits for the reply and writes the parameters. `epoch` is the
  // worker's own, for methods whose worker side follows it (DGC's warm-up). `lr`, when
  // given, is the rate this push is made with instead of the one the last reply carried (a
  // schedule of the caller's own, e.g. a PyTorch LR scheduler's).
  absl::Status step(int epoch = 0, std::optional<float> lr = std::nullopt);
  // BN running statistics to the servers, which average every worker's.
  absl::Status syncBuffers();
  // The servers' current model and averaged buffers, into spans the size of the model's.
  absl::Status pullModel(absl::Span<float> params, absl::Span<float> buffers);
  // Sends the BN statistics, loads the servers' model (as it is now: workers still
  // training move it on) into the module and leaves the job.
  absl::Status finish();
  // Leaves the job as it is, without the pull (the driver: its servers evaluate the model).
  absl::Status leave();

  float lr() const;
  uint64_t steps() const;
  // The servers' version, pushes and rate when this worker started (the epoch to resume at).
  const ServerProgress& initial() const { return initial_; }
  const StepStats& lastStep() const { return last_; }
  const FlatModel& model() const { return model_; }
  // The method's worker state (momentum, residuals), which the servers' checkpoint lacks;
  // loading changes nothing unless the bytes are a valid state of this method.
  std::string saveState() const;
  absl::Status loadState(const std::string& bytes);

 private:
  struct Connection;  // what connect() owns: the channel, the store, the job, the model
  PsWorker(FlatModel& model, std::unique_ptr<WorkerClient> client);
  absl::Status checkInJob(const char* call) const;

  std::unique_ptr<Connection> connection_;  // declared first: the client goes before it
  FlatModel& model_;
  std::unique_ptr<WorkerClient> client_;
  ServerProgress initial_;
  StepStats last_;
  bool left_ = false;
};

// Serves shard options.rank until every worker has finished or been dropped; the module's
// parameters are the model the workers start from.
absl::StatusOr<ShardStats> serveShard(const RankOptions& options,
                                       const std::shared_ptr<torch::nn::Module>& module);
absl::StatusOr<ShardStats> serveShard(const RankOptions& options,
                                       const FlatModel::NamedTensors& params,
                                       const FlatModel::NamedTensors& buffers);

}  // namespace sparseps

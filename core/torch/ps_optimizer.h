#pragma once
// PsOptimizer: the parameter server as a drop-in optimizer for a user's own LibTorch
// training loop. Build it from a FlatModel (the module's parameters and gradients as flat
// buffers) and a WorkerClient (the connection to the servers, makeWorkerClient in
// core/runtime/job.h); then, as with torch::optim::SGD:
//
//   auto flat = sparseps::FlatModel::create(net).value();
//   sparseps::PsOptimizer optimizer(flat, *client);
//   optimizer.start();                      // the servers' initial model
//   for (auto& batch : loader) {
//     optimizer.zero_grad();
//     torch::nll_loss(net->forward(batch.data), batch.target).backward();
//     optimizer.step();                     // push, wait for the reply, update the model
//   }
//   optimizer.finish();
//
// Errors (a server gone, a bad reply) are thrown as std::runtime_error from step(), as
// LibTorch optimizers do; the *Status variants return them instead.

#include <string>

#include "absl/status/status.h"
#include "core/torch/flat_model.h"
#include "core/runtime/worker_client.h"

namespace sparseps {

class PsOptimizer {
 public:
  PsOptimizer(FlatModel& model, WorkerClient& client) : model_(model), client_(client) {}

  absl::StatusOr<ServerState> startStatus();
  absl::Status stepStatus();
  void start();
  void step();
  void zero_grad() { model_.zeroGrad(); }
  // Sends this worker's BN running statistics to the servers (say once an epoch).
  absl::Status syncBuffers() { return client_.sendBuffers(model_.buffers()); }
  absl::Status finish() { return client_.finish(); }
  // The method's worker state (momentum, residuals), which the servers' checkpoint lacks.
  std::string saveState() const { return client_.saveRuleState(); }
  absl::Status loadState(const std::string& bytes) { return client_.loadRuleState(bytes); }

  void setEpoch(int epoch) { epoch_ = epoch; }
  float lr() const { return client_.lr(); }
  const StepStats& lastStep() const { return last_; }

 private:
  FlatModel& model_;
  WorkerClient& client_;
  int epoch_ = 0;
  StepStats last_;
};

}  // namespace sparseps

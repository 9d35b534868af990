#pragma once
// Worker: a training rank of a Python job. It flattens the module's tensors, connects to
// the servers and receives their initial model; then step() pushes the gradient the last
// backward() left in the flat gradient buffer and applies the reply to the parameters, all
// in C++ with the GIL released. sparseps.Optimizer (optimizer.py) is the torch face of it.

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>

#include "core/job.h"
#include "optim/method_registry.h"
#include "python/src/job_config.h"
#include "python/src/rank.h"

namespace sparseps::python {

class Worker {
 public:
  Worker(const JobConfig& config, const FlatModel::NamedTensors& params,
         const FlatModel::NamedTensors& buffers);
  ~Worker();

  void step(int epoch);
  void zeroGrad() { model_->flat.zeroGrad(); }
  // BN running statistics to the servers, which average every worker's.
  void syncBuffers();
  // The servers' current model and averaged buffers as two new flat tensors; the local
  // model is left alone.
  pybind11::tuple serverModel();
  // Copies the servers' model into the local parameters and buffers, then says goodbye.
  void finish();

  float lr() const { return session_->client().lr(); }
  uint64_t steps() const { return session_->client().steps(); }
  uint64_t initialVersion() const { return initial_version_; }
  const StepStats& lastStep() const { return last_; }
  pybind11::bytes saveState() const;
  void loadState(const std::string& bytes);
  pybind11::list layout() const;  // (name, offset, numel) per parameter

 private:
  void checkInJob(const char* call) const;  // throws once finish() has run

  MethodRegistry methods_;
  JobSpec job_;
  std::optional<RankModel> model_;  // set once the job checked out
  Connection connection_;
  std::unique_ptr<WorkerSession> session_;
  StepStats last_;
  uint64_t initial_version_ = 0;
  bool finished_ = false;
};

void bindWorker(pybind11::module_& m);

}  // namespace sparseps::python

#include "core/torch/ps_optimizer.h"

#include <stdexcept>
#include <string>

namespace sparseps {

absl::StatusOr<ServerState> PsOptimizer::startStatus() {
  return client_.start(model_.params(), model_.buffers());
}

absl::Status PsOptimizer::stepStatus() {
  last_ = StepStats{};
  model_.gatherGrads();
  return client_.step(model_.grads(), model_.params(), epoch_, &last_);
}

void PsOptimizer::start() {
  if (auto s = startStatus(); !s.ok()) throw std::runtime_error(std::string(s.status().message()));
}

void PsOptimizer::step() {
  if (auto s = stepStatus(); !s.ok()) throw std::runtime_error(std::string(s.message()));
}

}  // namespace sparseps

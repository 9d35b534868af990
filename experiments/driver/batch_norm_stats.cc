#include "experiments/driver/batch_norm_stats.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/utils.h>

#include <vector>

#include "absl/status/status.h"

namespace sparseps {

absl::StatusOr<int64_t> recomputeBatchNormStatistics(ImageClassifier& net, BatchIterator batches,
                                                      int64_t max_batches) {
  std::vector<torch::nn::BatchNorm2dImpl*> norms;
  std::vector<c10::optional<double>> momenta;
  for (const auto& module : net.modules(/*include_self=*/false)) {
    if (auto* bn = module->as<torch::nn::BatchNorm2dImpl>()) {
      norms.push_back(bn);
      momenta.push_back(bn->options.momentum());
      bn->options.momentum(c10::nullopt);  // no momentum: a cumulative average
      bn->reset_running_stats();
    }
  }
  torch::NoGradGuard no_grad;
  const bool was_training = net.is_training();
  net.train();
  int64_t used = 0;
  absl::Status failure;
  Batch batch;
  while (used < max_batches) {
    auto more = batches.next(&batch);
    if (!more.ok()) failure = more.status();
    if (!more.ok() || !*more) break;
    net.forward(batch.images);
    ++used;
  }
  net.train(was_training);
  for (size_t i = 0; i < norms.size(); ++i) norms[i]->options.momentum(momenta[i]);
  if (!failure.ok()) return failure;
  if (used == 0 && max_batches > 0) {
    return absl::FailedPreconditionError(
        "no training batches to recompute the BatchNorm statistics from (empty data shard)");
  }
  return used;
}

}  // namespace sparseps

#include "experiments/driver/evaluate.h"

#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

namespace sparseps {

absl::StatusOr<EvalResult> evaluate(ImageClassifier& net, const Dataset& dataset,
                                    int64_t batch_size, int64_t limit) {
  torch::NoGradGuard no_grad;
  const bool was_training = net.is_training();
  net.eval();
  EvalResult result;
  double loss_sum = 0;
  int64_t correct = 0;
  BatchIterator batches = dataset.testBatches(batch_size, limit);
  Batch batch;
  while (true) {
    auto more = batches.next(&batch);
    if (!more.ok()) return more.status();
    if (!*more) break;
    const torch::Tensor logits = net.forward(batch.images);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, batch.labels,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    correct += logits.argmax(1).eq(batch.labels).sum().item<int64_t>();
    result.examples += batch.labels.size(0);
  }
  net.train(was_training);
  if (result.examples > 0) {
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.examples);
    result.loss = loss_sum / static_cast<double>(result.examples);
  }
  return result;
}

}  // namespace sparseps

#pragma once
// The BatchNorm running statistics of a model's own weights. A servers' model W evaluated
// with statistics measured on other weights (the workers' models, which under dgs follow W
// only through sparse replies) scores far below what W is worth; recomputing them from a
// few training batches, as SWA does after averaging weights, gives W its own.

#include <cstdint>

#include "absl/status/statusor.h"
#include "experiments/datasets/dataset.h"
#include "experiments/models/image_classifier.h"

namespace sparseps {

// Resets every BatchNorm2d's running mean and variance, then sets them to the equally
// weighted average of the batch statistics over the next max_batches batches of `batches`
// (forward passes in training mode, no gradients). The statistics are written in place,
// so views into a flat buffer stay views; momentum and the training flag are restored.
// Returns how many batches were used (fewer when `batches` runs out).
absl::StatusOr<int64_t> recomputeBatchNormStatistics(ImageClassifier& net, BatchIterator batches,
                                                      int64_t max_batches);

}  // namespace sparseps

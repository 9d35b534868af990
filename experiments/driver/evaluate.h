#pragma once
// Test-set evaluation of a model in eval mode (BatchNorm uses its running statistics), no
// gradients: the accuracy and mean cross-entropy loss over the test split, or over a fixed
// seeded sample of `limit` of its examples (0: all of them; see Dataset::testBatches).

#include <cstdint>

#include "absl/status/statusor.h"
#include "experiments/datasets/dataset.h"
#include "experiments/models/image_classifier.h"

namespace sparseps {

struct EvalResult {
  double accuracy = 0;
  double loss = 0;
  int64_t examples = 0;
};

absl::StatusOr<EvalResult> evaluate(ImageClassifier& net, const Dataset& dataset,
                                    int64_t batch_size, int64_t limit = 0);

}  // namespace sparseps

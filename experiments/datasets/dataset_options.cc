#include "experiments/datasets/dataset_options.h"

#include "absl/strings/str_cat.h"

namespace sparseps {

absl::Status DatasetOptions::validate() const {
  if (image_size < 8 || image_size > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("DatasetOptions.image_size must be in [8, 1024], got ", image_size));
  }
  if (synthetic_train_size < 1 || synthetic_test_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DatasetOptions.synthetic_train_size and synthetic_test_size must be >= 1, got ",
        synthetic_train_size, " and ", synthetic_test_size));
  }
  if (synthetic_classes < 2 || synthetic_classes > 1000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DatasetOptions.synthetic_classes must be in [2, 1000], got ", synthetic_classes));
  }
  if (synthetic_shape.size() != 3 || synthetic_shape[0] < 1 || synthetic_shape[0] > 4 ||
      synthetic_shape[1] < 1 || synthetic_shape[2] < 1 ||
      synthetic_shape[1] * synthetic_shape[2] > (1 << 20)) {
    return absl::InvalidArgumentError(
        "DatasetOptions.synthetic_shape must be {C, H, W} with 1 <= C <= 4 and H * W <= 2^20");
  }
  return absl::OkStatus();
}

}  // namespace sparseps

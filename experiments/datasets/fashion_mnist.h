#pragma once
// Fashion-MNIST (Xiao, Rasul, Vollgraf 2017): 60,000 train + 10,000 test 28x28 grayscale
// images in 10 classes, as four gzip'd IDX files. Debian's dataset-fashion-mnist package
// installs them in kFashionMnistDefaultDir.

#include <string>

#include "absl/status/statusor.h"
#include "experiments/datasets/image_set.h"

namespace sparseps {

inline constexpr char kFashionMnistDefaultDir[] = "/usr/share/datasets/fashion-mnist";

// Reads {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] from `dir`. No augmentation is
// defined for it; normalization uses mean 0.2860, std 0.3530.
absl::StatusOr<ImageSplits> loadFashionMnist(const std::string& dir);

}  // namespace sparseps

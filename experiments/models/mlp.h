#pragma once
// A multilayer perceptron for 28 px images (Fashion-MNIST): the image flattened, two
// hidden layers of 256 ReLU units, then the classes. 269,322 parameters with 10 classes and
// one channel, about ResNet-20's count, but at about 6 floating-point operations per
// parameter and example instead of hundreds, so a worker's step costs about as much as
// coding its push: the model for runs whose pace the server or the links set, not the
// workers' compute. No BN buffers.

#include <cstdint>
#include <memory>

#include "experiments/models/image_classifier.h"

namespace sparseps {

inline constexpr int64_t kMlpImageSize = 28;
inline constexpr int64_t kMlpHidden = 256;

std::shared_ptr<ImageClassifier> makeMlp(int64_t num_classes, int64_t in_channels);

}  // namespace sparseps

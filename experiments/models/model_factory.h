#pragma once
// The model factory: maps a model name from the command line (--model=NAME) to a freshly
// initialized network. The list is explicit; an unknown name gets an error that lists the
// known ones.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/models/image_classifier.h"
#include "experiments/models/model_init.h"

namespace sparseps {

struct ModelInfo {
  std::string name;
  int64_t image_size;  // the input side the model is meant for (square images)
  std::string description;
  // > 0: the model's default learning rate follows the linear scaling rule of Goyal et al.
  // 2017 (arXiv:1706.02677): this x (the examples of one server update) / 256, with a
  // linear warm-up. 0: a fixed default rate.
  double lr_per_256 = 0;
  // Whether any input size large enough works (the ResNets' global pool), or only
  // image_size x image_size (the MLP's first layer is sized for it).
  bool any_size = true;
};

// Every model the factory knows, in a fixed order.
const std::vector<ModelInfo>& knownModels();
// The model called `name`, or null.
const ModelInfo* findModel(std::string_view name);

// InvalidArgument, naming the model and the size it takes, when `name` cannot classify
// images of height x width; OK for an unknown name (makeModel reports it).
absl::Status checkImageSize(std::string_view name, int64_t height, int64_t width);

// InvalidArgument when model `name` cannot start as `init` says; OK for an unknown name.
absl::Status checkInit(std::string_view name, ModelInit init);

// A new model `name` with the given number of classes and input channels, initialized
// from LibTorch's global generator (seed it with torch::manual_seed first) as `init` says.
// InvalidArgument for an unknown name, a non-positive size, or an init the model cannot
// take.
absl::StatusOr<std::shared_ptr<ImageClassifier>> makeModel(std::string_view name,
                                                           int64_t num_classes,
                                                           int64_t in_channels,
                                                           ModelInit init = ModelInit::kModel);

}  // namespace sparseps

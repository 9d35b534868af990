#include "experiments/models/model_factory.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "experiments/models/mlp.h"
#include "experiments/models/resnet.h"

namespace sparseps {

const std::vector<ModelInfo>& knownModels() {
  static const std::vector<ModelInfo> kModels = {
      {"resnet50", 224, "torchvision ResNet-50 (bottlenecks [3,4,6,3], 7x7 stem + max-pool)",
       0.1},
      {"resnet18", 224, "torchvision ResNet-18 (basic blocks [2,2,2,2], 7x7 stem + max-pool)",
       0.1},
      {"resnet18_cifar", 32, "CIFAR ResNet-18 (kuangliu/pytorch-cifar, 3x3 stem)"},
      {"resnet20", 32, "CIFAR ResNet-20 (He et al. 2016, option A shortcuts)"},
      {"small_resnet", 28, "small ResNet for 28 px grayscale, 16/32/64 channels"},
      {"mlp", kMlpImageSize,
       "MLP for 28 px images, two hidden layers of 256 (ResNet-20's size at a sliver of its "
       "compute)", 0, /*any_size=*/false},
  };
  return kModels;
}

const ModelInfo* findModel(std::string_view name) {
  for (const ModelInfo& m : knownModels()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

absl::Status checkImageSize(std::string_view name, int64_t height, int64_t width) {
  const ModelInfo* m = findModel(name);
  if (m == nullptr || m->any_size || (height == m->image_size && width == m->image_size)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--model=", m->name, " takes ", m->image_size, " x ", m->image_size, " images; the data "
      "set's are ", height, " x ", width, ": pick a data set of that size (fashion-mnist, "
      "synthetic) or another model"));
}

absl::Status checkInit(std::string_view name, ModelInit init) {
  if (name == "mlp" && (init == ModelInit::kKaimingFanOut || init == ModelInit::kTorch04)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--init=", nameOf(kModelInitNames, init),
        " differs from torch-default only in convolutions and batch norm, and the mlp has "
        "neither: use --init=torch-default (its own)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<ImageClassifier>> makeModel(std::string_view name,
                                                           int64_t num_classes,
                                                           int64_t in_channels,
                                                           ModelInit init) {
  if (num_classes < 1 || in_channels < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("makeModel: num_classes (", num_classes, ") and in_channels (",
                     in_channels, ") must be positive"));
  }
  const auto resnet = [init](ResNetConfig c) {
    if (init == ModelInit::kTorchDefault || init == ModelInit::kTorch04) {
      c.init = init == ModelInit::kTorch04 ? ResNetConfig::Init::kTorch04
                                           : ResNetConfig::Init::kTorchDefault;
      c.zero_init_residual = false;
    }
    return makeResNet(c);
  };
  if (name == "resnet50") return resnet(resnet50Config(num_classes, in_channels));
  if (name == "resnet18") return resnet(resnet18Config(num_classes, in_channels));
  if (name == "resnet18_cifar") return resnet(resnet18CifarConfig(num_classes, in_channels));
  if (name == "resnet20") return resnet(resnet20Config(num_classes, in_channels));
  if (name == "small_resnet") return resnet(smallResNetConfig(num_classes, in_channels));
  if (absl::Status s = checkInit(name, init); !s.ok()) return s;
  if (name == "mlp") return makeMlp(num_classes, in_channels);
  std::vector<std::string> names;
  for (const ModelInfo& m : knownModels()) names.push_back(m.name);
  return absl::InvalidArgumentError(absl::StrCat("unknown model '", std::string(name),
                                                 "'; known models: ",
                                                 absl::StrJoin(names, ", ")));
}

}  // namespace sparseps

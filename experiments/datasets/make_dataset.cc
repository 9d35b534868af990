#include "experiments/datasets/make_dataset.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "experiments/datasets/cifar10.h"
#include "experiments/datasets/dense_dataset.h"
#include "experiments/datasets/fashion_mnist.h"
#include "experiments/datasets/imagenette_dataset.h"
#include "experiments/datasets/synthetic.h"

namespace sparseps {

std::vector<std::string> knownDatasets() {
  return {"fashion-mnist", "cifar10", "imagenette", "synthetic"};
}

std::string defaultDataDir(const std::string& name) {
  if (name == "fashion-mnist") return kFashionMnistDefaultDir;
  if (name == "cifar10") return "data/cifar10";
  if (name == "imagenette") return "data/imagenette";
  return "";
}

absl::Status checkNormalization(const std::string& name, Normalization normalization) {
  if (normalization == Normalization::kPerImageStd && name != "cifar10") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--normalization=per-image-std is defined for cifar10 only; ", name,
        " takes dataset-std"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Dataset>> makeDataset(const std::string& name,
                                                     const std::string& dir,
                                                     const DatasetOptions& options) {
  if (absl::Status s = options.validate(); !s.ok()) return s;
  const std::string where = dir.empty() ? defaultDataDir(name) : dir;
  if (absl::Status s = checkNormalization(name, options.normalization); !s.ok()) return s;
  if (name == "fashion-mnist" || name == "cifar10") {
    const bool cifar = name == "cifar10";
    absl::StatusOr<ImageSplits> splits =
        cifar ? loadCifar10(where, options.normalization) : loadFashionMnist(where);
    if (!splits.ok()) return splits.status();
    return std::unique_ptr<Dataset>(new DenseDataset(
        name, std::move(*splits), cifar ? DenseAugment::kPadCropFlip : DenseAugment::kNone,
        options.seed, options.augment));
  }
  if (name == "imagenette") {
    absl::StatusOr<std::unique_ptr<ImagenetteDataset>> ds = ImagenetteDataset::open(where, options);
    if (!ds.ok()) return ds.status();
    return std::unique_ptr<Dataset>(std::move(*ds));
  }
  if (name == "synthetic") {
    return std::unique_ptr<Dataset>(new DenseDataset(
        name, makeSyntheticImages(options), DenseAugment::kNone, options.seed, options.augment));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dataset \"", name, "\"; known: ", absl::StrJoin(knownDatasets(), ", ")));
}

}  // namespace sparseps

#include "experiments/datasets/fashion_mnist.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "experiments/datasets/idx_file.h"

namespace sparseps {
namespace {

constexpr int kClasses = 10;

std::string missingMessage(const std::string& dir, const std::string& file) {
  return absl::StrCat(
      "Fashion-MNIST not found in ", dir, ": no ", file,
      ".gz. Expected train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
      "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz there. Install them with: "
      "apt-get install dataset-fashion-mnist (scripts/install-deps does), which puts them in ",
      kFashionMnistDefaultDir, ", or copy the four files into ", dir);
}

// Finds `stem`.gz or `stem` in dir.
absl::StatusOr<std::string> findFile(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {stem + ".gz", stem}) {
    std::string path = (std::filesystem::path(dir) / name).string();
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return absl::NotFoundError(missingMessage(dir, stem));
}

absl::StatusOr<ImageSet> loadSplit(const std::string& dir, const std::string& prefix) {
  absl::StatusOr<std::string> images_path = findFile(dir, prefix + "-images-idx3-ubyte");
  if (!images_path.ok()) return images_path.status();
  absl::StatusOr<std::string> labels_path = findFile(dir, prefix + "-labels-idx1-ubyte");
  if (!labels_path.ok()) return labels_path.status();
  absl::StatusOr<IdxArray> images = readIdxFile(*images_path, 3);
  if (!images.ok()) return images.status();
  absl::StatusOr<IdxArray> labels = readIdxFile(*labels_path, 1);
  if (!labels.ok()) return labels.status();
  if (images->dims[0] != labels->dims[0]) {
    return absl::DataLossError(absl::StrCat(*images_path, " holds ", images->dims[0],
                                            " images but ", *labels_path, " holds ",
                                            labels->dims[0], " labels"));
  }
  ImageSet set;
  set.channels = 1;
  set.height = images->dims[1];
  set.width = images->dims[2];
  set.pixels = std::move(images->data);
  set.labels.reserve(labels->data.size());
  for (uint8_t l : labels->data) {
    if (l >= kClasses) {
      return absl::DataLossError(
          absl::StrCat(*labels_path, ": label ", int{l}, " outside [0, ", kClasses, ")"));
    }
    set.labels.push_back(l);
  }
  return set;
}

}  // namespace

absl::StatusOr<ImageSplits> loadFashionMnist(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(missingMessage(dir, "train-images-idx3-ubyte"));
  }
  ImageSplits out;
  absl::StatusOr<ImageSet> train = loadSplit(dir, "train");
  if (!train.ok()) return train.status();
  absl::StatusOr<ImageSet> test = loadSplit(dir, "t10k");
  if (!test.ok()) return test.status();
  if (train->height != test->height || train->width != test->width) {
    return absl::DataLossError(
        absl::StrCat("Fashion-MNIST in ", dir, ": train and test images differ in size"));
  }
  out.train = std::move(*train);
  out.test = std::move(*test);
  out.num_classes = kClasses;
  out.stats = {{0.2860f}, {0.3530f}};
  out.description = absl::StrCat("Fashion-MNIST from ", dir, ": ", out.train.size(), " train, ",
                                 out.test.size(), " test images");
  return out;
}

}  // namespace sparseps

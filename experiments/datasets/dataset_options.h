#pragma once
// Options every data set reads. Chained setters keep call sites readable; validate() names the
// bad field. Torch-free so the driver's flag parsing can include it cheaply.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "optim/option_names.h"

namespace sparseps {

// How images are normalized (--normalization): by the data set's per-channel std over all
// pixels, or (cifar10 only) by the mean of the per-image standard deviations, the
// (0.2023, 0.1994, 0.2010) of kuangliu/pytorch-cifar and the DGS reference: inputs about
// 1.2x larger. The mean is the data set's either way.
enum class Normalization { kDatasetStd, kPerImageStd };
inline constexpr NameTable<Normalization, 2> kNormalizationNames{
    {{"dataset-std", Normalization::kDatasetStd}, {"per-image-std", Normalization::kPerImageStd}}};

struct DatasetOptions {
  uint64_t seed = 0;         // shard permutation, epoch shuffles, augmentation, synthetic data
  bool augment = true;       // training augmentation in trainBatches (never on the test split)
  int image_size = 224;      // Imagenette: side of the square crop fed to the model
  bool preload = false;      // Imagenette: decode every image in makeDataset instead of lazily
  Normalization normalization = Normalization::kDatasetStd;
  // Synthetic data: sizes, classes and image shape {C, H, W}.
  int64_t synthetic_train_size = 4096;
  int64_t synthetic_test_size = 1024;
  int synthetic_classes = 10;
  std::vector<int64_t> synthetic_shape = {3, 32, 32};

  DatasetOptions& setSeed(uint64_t v) { seed = v; return *this; }
  DatasetOptions& setAugment(bool v) { augment = v; return *this; }
  DatasetOptions& setImageSize(int v) { image_size = v; return *this; }
  DatasetOptions& setPreload(bool v) { preload = v; return *this; }
  DatasetOptions& setNormalization(Normalization v) { normalization = v; return *this; }
  DatasetOptions& setSyntheticTrainSize(int64_t v) { synthetic_train_size = v; return *this; }
  DatasetOptions& setSyntheticTestSize(int64_t v) { synthetic_test_size = v; return *this; }
  DatasetOptions& setSyntheticClasses(int v) { synthetic_classes = v; return *this; }
  DatasetOptions& setSyntheticShape(std::vector<int64_t> v) {
    synthetic_shape = std::move(v);
    return *this;
  }

  absl::Status validate() const;
};

}  // namespace sparseps

#pragma once
// The one entry point the driver needs: a data set by name. Known names: "fashion-mnist",
// "cifar10", "imagenette", "synthetic". Each error says what is missing, where it looked and
// how to get the data.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/datasets/dataset.h"
#include "experiments/datasets/dataset_options.h"

namespace sparseps {

// The names makeDataset accepts, in a fixed order.
std::vector<std::string> knownDatasets();

// Where a data set is looked for when no directory is given: /usr/share/datasets/fashion-mnist
// (Debian's dataset-fashion-mnist), data/cifar10 and data/imagenette (relative to the working
// directory, where experiments/fetch-data puts them by default); "" for synthetic.
std::string defaultDataDir(const std::string& name);

// InvalidArgument when data set `name` has no such normalization (per-image-std: cifar10).
absl::Status checkNormalization(const std::string& name, Normalization normalization);

// Loads `name` from `dir` ("" = defaultDataDir(name)). The synthetic set ignores `dir`.
absl::StatusOr<std::unique_ptr<Dataset>> makeDataset(const std::string& name,
                                                     const std::string& dir,
                                                     const DatasetOptions& options);

}  // namespace sparseps

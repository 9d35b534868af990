#pragma once
// Synthetic images for tests and smoke runs: random but learnable. Each class c has a fixed
// random mean image mu_c; a sample of class c is clip(mu_c + noise), noise ~ N(0, 40^2) per
// pixel (on the 0..255 scale), so a linear model separates the classes well. Everything is
// drawn from DatasetOptions::seed, so two processes with one seed see the same data.

#include "experiments/datasets/dataset_options.h"
#include "experiments/datasets/image_set.h"

namespace sparseps {

// Uses options.synthetic_{train_size, test_size, classes, shape} and options.seed. Labels are
// balanced (sample i has label i mod classes before the dataset's shuffles).
ImageSplits makeSyntheticImages(const DatasetOptions& options);

}  // namespace sparseps

#pragma once
// CIFAR-10 (Krizhevsky 2009), binary version: cifar-10-batches-bin/data_batch_{1..5}.bin and
// test_batch.bin, each a run of 3073-byte records (1 label byte, then 1024 R, 1024 G, 1024 B
// bytes of a 32x32 image, row-major). Fetch with `experiments/fetch-data cifar10 --dir D`.

#include <string>

#include "absl/status/statusor.h"
#include "experiments/datasets/dataset_options.h"
#include "experiments/datasets/image_set.h"

namespace sparseps {

// Reads the batches found under `dir`/cifar-10-batches-bin (or `dir` itself when it holds the
// .bin files): any subset of data_batch_1..5 (at least one) plus test_batch.bin. The
// description names the files found. Normalization: mean (0.4914, 0.4822, 0.4465), std
// (0.2470, 0.2435, 0.2616) over all pixels, or with kPerImageStd the mean of the images'
// own standard deviations, (0.2023, 0.1994, 0.2010) as the code that spread them writes it
// (the training set's own: 0.2022, 0.1993, 0.2009).
absl::StatusOr<ImageSplits> loadCifar10(const std::string& dir,
                                        Normalization normalization = Normalization::kDatasetStd);

}  // namespace sparseps

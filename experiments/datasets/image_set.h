#pragma once
// A split of a data set whose images all have one shape, as raw bytes: what the Fashion-MNIST,
// CIFAR-10 and synthetic readers produce. Torch-free, so the file readers compile fast and can
// be tested without LibTorch; DenseDataset turns it into normalized tensors.

#include <cstdint>
#include <string>
#include <vector>

namespace sparseps {

struct ImageSet {
  int64_t channels = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;  // N x C x H x W, row-major
  std::vector<int64_t> labels;  // N, in [0, num_classes)
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t imageBytes() const { return channels * height * width; }
};

// Per-channel mean and standard deviation of pixel / 255, used to normalize.
struct ChannelStats {
  std::vector<float> mean, stddev;
};

// Both splits of a fixed-shape data set, as the readers return them.
struct ImageSplits {
  ImageSet train, test;
  int num_classes = 0;
  ChannelStats stats;
  std::string description;  // what was loaded from where, for the run log
};

}  // namespace sparseps

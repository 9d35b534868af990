#pragma once
// A Dataset over fixed-shape images held in memory as bytes (Fashion-MNIST, CIFAR-10,
// synthetic). Batches are normalized with the data set's per-channel mean and std. The
// training augmentation of the CIFAR reference runs is available: a random 32x32 crop of the
// image zero-padded by 4 on each side, then a horizontal flip with probability 1/2
// (torchvision RandomCrop(32, padding=4) + RandomHorizontalFlip).

#include <memory>
#include <string>

#include "experiments/datasets/dataset.h"
#include "experiments/datasets/image_set.h"

namespace sparseps {

enum class DenseAugment { kNone, kPadCropFlip };

class DenseDataset : public Dataset {
 public:
  DenseDataset(std::string name, ImageSplits splits, DenseAugment augmentation, uint64_t seed,
               bool augment);

  std::string name() const override { return name_; }
  std::string description() const override { return splits_.description; }
  int64_t size(Split split) const override { return set(split).size(); }
  int64_t numClasses() const override { return splits_.num_classes; }
  std::vector<int64_t> imageShape() const override;
  at::Tensor labels(Split split) const override;
  absl::StatusOr<Batch> getBatch(Split split, absl::Span<const int64_t> indices, bool augment,
                                 uint64_t seed) const override;

 private:
  const ImageSet& set(Split split) const {
    return split == Split::kTrain ? splits_.train : splits_.test;
  }

  std::string name_;
  ImageSplits splits_;
  DenseAugment augmentation_;
};

}  // namespace sparseps

#pragma once
// Imagenette (Howard 2019, https://github.com/fastai/imagenette): 10 ImageNet classes as
// JPEG folders, train/<wnid>/*.JPEG and val/<wnid>/*.JPEG; class k is the k-th wnid of train/
// in sorted order. Images are decoded with libjpeg-turbo (grayscale ones become 3 channels)
// once, on first use (or all up front with DatasetOptions::preload), and kept in memory as
// uint8 images whose shorter side is resized to S = round(image_size * 256 / 224), so later
// epochs never decode again and a worker only decodes its own shard. Batches follow the
// ImageNet reference pipeline, with ImageNet's mean (0.485, 0.456, 0.406) and std (0.229,
// 0.224, 0.225):
//   train: RandomResizedCrop(image_size, scale (0.08, 1), ratio (3/4, 4/3)) of the cached
//          image + horizontal flip with probability 1/2;
//   val:   center crop image_size x image_size of the cached image (= Resize(S) +
//          CenterCrop(image_size)).
// Resizing is antialiased bilinear (ATen's _upsample_bilinear2d_aa, like PIL's).

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "experiments/datasets/dataset.h"
#include "experiments/datasets/dataset_options.h"

namespace sparseps {

class ImagenetteDataset : public Dataset {
 public:
  // Scans `dir`/{train,val} (or `dir`/imagenette2/{train,val}); with options.preload decodes
  // every image now. Errors say what is missing or which file is broken.
  static absl::StatusOr<std::unique_ptr<ImagenetteDataset>> open(const std::string& dir,
                                                                 const DatasetOptions& options);

  std::string name() const override { return "imagenette"; }
  std::string description() const override { return description_; }
  int64_t size(Split split) const override;
  int64_t numClasses() const override { return static_cast<int64_t>(wnids_.size()); }
  std::vector<int64_t> imageShape() const override { return {3, image_size_, image_size_}; }
  at::Tensor labels(Split split) const override;
  absl::StatusOr<Batch> getBatch(Split split, absl::Span<const int64_t> indices, bool augment,
                                 uint64_t seed) const override;

  // Decodes every JPEG of both splits (on every core) without caching them.
  absl::StatusOr<Footprint> checkAll() const override;

  const std::vector<std::string>& wnids() const { return wnids_; }
  // Number of grayscale (1-channel) JPEGs among the images decoded so far.
  int64_t grayscaleDecoded() const;

 private:
  struct Part {
    std::vector<std::string> paths;
    std::vector<int64_t> labels;
    std::vector<at::Tensor>
        cache;  // uint8 [3, H, W], shorter side short_side_; undefined = not yet
  };

  ImagenetteDataset(const DatasetOptions& options, std::vector<std::string> wnids, Part train,
                    Part val, std::string description);
  // The cached image, decoding it on first use.
  absl::StatusOr<at::Tensor> image(Split split, int64_t index) const;

  int64_t image_size_;
  int64_t short_side_;
  std::vector<std::string> wnids_;
  std::string description_;
  mutable std::mutex mutex_;  // guards the caches and grayscale_ (getBatch may run on threads)
  mutable Part parts_[2];     // kTrain, kTest
  mutable int64_t grayscale_ = 0;
};

}  // namespace sparseps

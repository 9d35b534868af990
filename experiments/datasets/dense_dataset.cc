#include "experiments/datasets/dense_dataset.h"

#include <ATen/ATen.h>

#include <random>

#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

constexpr int64_t kPad = 4;

}  // namespace

DenseDataset::DenseDataset(std::string name, ImageSplits splits, DenseAugment augmentation,
                           uint64_t seed, bool augment)
    : Dataset(seed, augment),
      name_(std::move(name)),
      splits_(std::move(splits)),
      augmentation_(augmentation) {}

std::vector<int64_t> DenseDataset::imageShape() const {
  return {splits_.train.channels, splits_.train.height, splits_.train.width};
}

at::Tensor DenseDataset::labels(Split split) const {
  const ImageSet& s = set(split);
  return at::tensor(at::ArrayRef<int64_t>(s.labels), at::kLong);
}

absl::StatusOr<Batch> DenseDataset::getBatch(Split split, absl::Span<const int64_t> indices,
                                             bool augment, uint64_t seed) const {
  const ImageSet& s = set(split);
  const int64_t b = static_cast<int64_t>(indices.size());
  const int64_t c = s.channels, h = s.height, w = s.width;
  Batch out;
  out.images = at::empty({b, c, h, w}, at::kFloat);
  out.labels = at::empty({b}, at::kLong);
  float* dst = out.images.data_ptr<float>();
  int64_t* labels = out.labels.data_ptr<int64_t>();
  // x_normalized = (byte / 255 - mean) / std = byte * scale + shift
  std::vector<float> scale(c), shift(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    scale[ch] = 1.0f / (255.0f * splits_.stats.stddev[ch]);
    shift[ch] = -splits_.stats.mean[ch] / splits_.stats.stddev[ch];
  }
  const bool pad_crop = augment && augmentation_ == DenseAugment::kPadCropFlip;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> offset(0, 2 * kPad);
  std::bernoulli_distribution flip(0.5);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t index = indices[i];
    if (index < 0 || index >= s.size()) {
      return absl::OutOfRangeError(
          absl::StrCat(name_, ": index ", index, " outside [0, ", s.size(), ")"));
    }
    labels[i] = s.labels[index];
    const uint8_t* src = s.pixels.data() + index * s.imageBytes();
    // The output pixel (y, x) reads source pixel (y + dy, x + dx), mirrored when flipping;
    // outside the source it is the zero padding.
    int64_t dy = 0, dx = 0;
    bool mirror = false;
    if (pad_crop) {
      dy = offset(rng) - kPad;
      dx = offset(rng) - kPad;
      mirror = flip(rng);
    }
    for (int64_t ch = 0; ch < c; ++ch) {
      const uint8_t* plane = src + ch * h * w;
      float* out_plane = dst + (i * c + ch) * h * w;
      for (int64_t y = 0; y < h; ++y) {
        const int64_t sy = y + dy;
        for (int64_t x = 0; x < w; ++x) {
          const int64_t sx = (mirror ? w - 1 - x : x) + dx;
          const float v = (sy >= 0 && sy < h && sx >= 0 && sx < w) ? plane[sy * w + sx] : 0.0f;
          out_plane[y * w + x] = v * scale[ch] + shift[ch];
        }
      }
    }
  }
  return out;
}

}  // namespace sparseps

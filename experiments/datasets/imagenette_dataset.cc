#include "experiments/datasets/imagenette_dataset.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compressors/kernels/thread_pool.h"
#include "experiments/datasets/jpeg_decode.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;

constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

std::string notFound(const std::string& dir, const std::string& what) {
  return absl::StrCat("Imagenette not found in ", dir, ": ", what,
                      ". Expected train/<wnid>/*.JPEG and val/<wnid>/*.JPEG (or "
                      "imagenette2/train, imagenette2/val). Run: experiments/fetch-data imagenette "
                      "--dir ",
                      dir);
}

bool isJpegName(const fs::path& p) {
  std::string ext = absl::AsciiStrToLower(p.extension().string());
  return ext == ".jpeg" || ext == ".jpg";
}

// Sorted class folders of `root` that hold at least one JPEG.
std::vector<std::string> classFolders(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory()) continue;
    for (const fs::directory_entry& f : fs::directory_iterator(e.path(), ec)) {
      if (f.is_regular_file() && isJpegName(f.path())) {
        out.push_back(e.path().filename().string());
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Resizes a uint8 or float [C, H, W] image to [C, h, w] (antialiased bilinear), as float.
at::Tensor resize(const at::Tensor& image, int64_t h, int64_t w) {
  at::Tensor f = image.to(at::kFloat).unsqueeze(0);
  if (f.size(2) == h && f.size(3) == w) return f.squeeze(0);
  return at::_upsample_bilinear2d_aa(f, {h, w}, /*align_corners=*/false).squeeze(0);
}

// [h, w] of a decoded height x width image once its shorter side is resized to short_side.
std::pair<int64_t, int64_t> cachedSize(int height, int width, int64_t short_side) {
  const double shorter = std::min(height, width);
  return {std::max<int64_t>(1, std::lround(height * short_side / shorter)),
          std::max<int64_t>(1, std::lround(width * short_side / shorter))};
}

struct Box {
  int64_t top, left, height, width;
};

// torchvision's RandomResizedCrop.get_params with scale (0.08, 1), ratio (3/4, 4/3).
Box randomResizedCropBox(int64_t h, int64_t w, std::mt19937_64& rng) {
  const double area = static_cast<double>(h * w);
  std::uniform_real_distribution<double> scale(0.08, 1.0);
  std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4.0), std::log(4.0 / 3.0));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * scale(rng);
    const double ratio = std::exp(log_ratio(rng));
    const auto cw = static_cast<int64_t>(std::lround(std::sqrt(target * ratio)));
    const auto ch = static_cast<int64_t>(std::lround(std::sqrt(target / ratio)));
    if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
      const int64_t top = std::uniform_int_distribution<int64_t>(0, h - ch)(rng);
      const int64_t left = std::uniform_int_distribution<int64_t>(0, w - cw)(rng);
      return {top, left, ch, cw};
    }
  }
  // Fallback: the whole image, cut to the nearest allowed aspect ratio, centered.
  const double in_ratio = static_cast<double>(w) / static_cast<double>(h);
  int64_t cw = w, ch = h;
  if (in_ratio < 3.0 / 4.0) {
    ch = std::min<int64_t>(h, std::lround(static_cast<double>(w) * 4.0 / 3.0));
  } else if (in_ratio > 4.0 / 3.0) {
    cw = std::min<int64_t>(w, std::lround(static_cast<double>(h) * 4.0 / 3.0));
  }
  return {(h - ch) / 2, (w - cw) / 2, ch, cw};
}

}  // namespace

absl::StatusOr<std::unique_ptr<ImagenetteDataset>> ImagenetteDataset::open(
    const std::string& dir, const DatasetOptions& options) {
  std::error_code ec;
  fs::path root = dir;
  if (!fs::is_directory(root / "train", ec) && fs::is_directory(root / "imagenette2/train", ec)) {
    root /= "imagenette2";
  }
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(notFound(dir, "no such directory"));
  for (const char* split : {"train", "val"}) {
    if (!fs::is_directory(root / split, ec)) {
      return absl::NotFoundError(notFound(dir, absl::StrCat("no ", split, "/ folder")));
    }
  }
  std::vector<std::string> wnids = classFolders(root / "train");
  if (wnids.size() < 2) {
    return absl::NotFoundError(notFound(
        dir, absl::StrCat("train/ has ", wnids.size(), " class folders with JPEGs, need >= 2")));
  }
  Part parts[2];
  for (int s = 0; s < 2; ++s) {
    const fs::path split_dir = root / (s == 0 ? "train" : "val");
    for (const std::string& extra : classFolders(split_dir)) {
      if (!std::binary_search(wnids.begin(), wnids.end(), extra)) {
        return absl::DataLossError(absl::StrCat("Imagenette in ", dir, ": val/", extra,
                                                " is a class that train/ does not have"));
      }
    }
    for (size_t label = 0; label < wnids.size(); ++label) {
      std::vector<std::string> files;
      for (const fs::directory_entry& f : fs::directory_iterator(split_dir / wnids[label], ec)) {
        if (f.is_regular_file() && isJpegName(f.path())) files.push_back(f.path().string());
      }
      std::sort(files.begin(), files.end());
      for (std::string& f : files) {
        parts[s].paths.push_back(std::move(f));
        parts[s].labels.push_back(static_cast<int64_t>(label));
      }
    }
    if (parts[s].paths.empty()) {
      return absl::NotFoundError(notFound(dir, absl::StrCat("no JPEGs in ", split_dir.string())));
    }
    parts[s].cache.resize(parts[s].paths.size());
  }
  std::string description =
      absl::StrCat("Imagenette from ", root.string(), ": ", parts[0].paths.size(), " train, ",
                   parts[1].paths.size(), " val images in ", wnids.size(), " classes");
  std::unique_ptr<ImagenetteDataset> ds(new ImagenetteDataset(
      options, std::move(wnids), std::move(parts[0]), std::move(parts[1]), std::move(description)));
  if (options.preload) {
    for (Split split : {Split::kTrain, Split::kTest}) {
      for (int64_t i = 0; i < ds->size(split); ++i) {
        if (absl::StatusOr<at::Tensor> img = ds->image(split, i); !img.ok()) return img.status();
      }
    }
  }
  return ds;
}

ImagenetteDataset::ImagenetteDataset(const DatasetOptions& options, std::vector<std::string> wnids,
                                     Part train, Part val, std::string description)
    : Dataset(options.seed, options.augment),
      image_size_(options.image_size),
      short_side_(std::lround(options.image_size * 256.0 / 224.0)),
      wnids_(std::move(wnids)),
      description_(std::move(description)),
      parts_{std::move(train), std::move(val)} {}

int64_t ImagenetteDataset::size(Split split) const {
  return static_cast<int64_t>(parts_[split == Split::kTrain ? 0 : 1].paths.size());
}

at::Tensor ImagenetteDataset::labels(Split split) const {
  return at::tensor(at::ArrayRef<int64_t>(parts_[split == Split::kTrain ? 0 : 1].labels),
                    at::kLong);
}

int64_t ImagenetteDataset::grayscaleDecoded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return grayscale_;
}

absl::StatusOr<at::Tensor> ImagenetteDataset::image(Split split, int64_t index) const {
  Part& part = parts_[split == Split::kTrain ? 0 : 1];
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (part.cache[index].defined()) return part.cache[index];
  }
  absl::StatusOr<RgbImage> rgb = decodeJpegFile(part.paths[index], static_cast<int>(short_side_));
  if (!rgb.ok()) return rgb.status();
  at::Tensor hwc = at::from_blob(rgb->pixels.data(), {rgb->height, rgb->width, 3}, at::kByte);
  at::Tensor chw = hwc.permute({2, 0, 1});
  const auto [h, w] = cachedSize(rgb->height, rgb->width, short_side_);
  at::Tensor cached = resize(chw, h, w).round_().clamp_(0, 255).to(at::kByte).contiguous();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!part.cache[index].defined()) {
    part.cache[index] = cached;
    if (rgb->source_channels == 1) ++grayscale_;
  }
  return part.cache[index];
}

absl::StatusOr<Dataset::Footprint> ImagenetteDataset::checkAll() const {
  // Decoding is most of the cost: every core decodes.
  ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  Footprint footprint;
  for (int s = 0; s < 2; ++s) {
    const std::vector<std::string>& paths = parts_[s].paths;
    std::vector<absl::Status> errors(paths.size());
    std::vector<int64_t> bytes(paths.size(), 0);
    pool.parallelFor(paths.size(), [&](size_t i) {
      absl::StatusOr<RgbImage> rgb = decodeJpegFile(paths[i], static_cast<int>(short_side_));
      if (!rgb.ok()) {
        errors[i] = rgb.status();
        return;
      }
      const auto [h, w] = cachedSize(rgb->height, rgb->width, short_side_);
      bytes[i] = 3 * h * w;
    });
    for (const absl::Status& e : errors) {  // the first broken file, in path order
      if (!e.ok()) return e;
    }
    const int64_t total = std::accumulate(bytes.begin(), bytes.end(), int64_t{0});
    (s == 0 ? footprint.train_bytes : footprint.test_bytes) = total;
  }
  return footprint;
}

absl::StatusOr<Batch> ImagenetteDataset::getBatch(Split split, absl::Span<const int64_t> indices,
                                                  bool augment, uint64_t seed) const {
  const Part& part = parts_[split == Split::kTrain ? 0 : 1];
  const int64_t b = static_cast<int64_t>(indices.size());
  Batch out;
  out.images = at::empty({b, 3, image_size_, image_size_}, at::kFloat);
  out.labels = at::empty({b}, at::kLong);
  int64_t* labels = out.labels.data_ptr<int64_t>();
  const bool train_aug = augment && split == Split::kTrain;
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution flip(0.5);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t index = indices[i];
    if (index < 0 || index >= size(split)) {
      return absl::OutOfRangeError(
          absl::StrCat("imagenette: index ", index, " outside [0, ", size(split), ")"));
    }
    absl::StatusOr<at::Tensor> img = image(split, index);
    if (!img.ok()) return img.status();
    const int64_t h = img->size(1), w = img->size(2);
    at::Tensor crop;
    if (train_aug) {
      const Box box = randomResizedCropBox(h, w, rng);
      crop = resize(img->narrow(1, box.top, box.height).narrow(2, box.left, box.width), image_size_,
                    image_size_);
      if (flip(rng)) crop = crop.flip({2});
    } else {
      // Small images (shorter side < image_size cannot happen after the resize to S >=
      // image_size) are center-cropped like torchvision: offset round((h - size) / 2).
      const int64_t top = std::lround((h - image_size_) / 2.0);
      const int64_t left = std::lround((w - image_size_) / 2.0);
      crop = img->narrow(1, top, image_size_).narrow(2, left, image_size_).to(at::kFloat);
    }
    out.images[i].copy_(crop);
    labels[i] = part.labels[index];
  }
  at::Tensor mean = at::tensor(at::ArrayRef<float>(kMean, 3)).view({1, 3, 1, 1}) * 255.0f;
  at::Tensor stddev = at::tensor(at::ArrayRef<float>(kStd, 3)).view({1, 3, 1, 1}) * 255.0f;
  out.images.sub_(mean).div_(stddev);
  return out;
}

}  // namespace sparseps

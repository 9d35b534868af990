#include "experiments/datasets/synthetic.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

constexpr double kNoiseStd = 40.0;

void fill(const std::vector<std::vector<double>>& means, int64_t n, std::mt19937_64& rng,
          ImageSet& set) {
  const int64_t bytes = set.imageBytes();
  const int64_t classes = static_cast<int64_t>(means.size());
  std::normal_distribution<double> noise(0.0, kNoiseStd);
  set.pixels.resize(static_cast<size_t>(n * bytes));
  set.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = i % classes;
    set.labels[i] = label;
    for (int64_t p = 0; p < bytes; ++p) {
      double v = std::round(means[label][p] + noise(rng));
      set.pixels[i * bytes + p] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
    }
  }
}

}  // namespace

ImageSplits makeSyntheticImages(const DatasetOptions& options) {
  ImageSplits out;
  for (ImageSet* s : {&out.train, &out.test}) {
    s->channels = options.synthetic_shape[0];
    s->height = options.synthetic_shape[1];
    s->width = options.synthetic_shape[2];
  }
  std::mt19937_64 rng(options.seed ^ 0x5eed5eed5eedull);
  std::uniform_real_distribution<double> mean(48.0, 208.0);
  std::vector<std::vector<double>> means(options.synthetic_classes);
  for (auto& m : means) {
    m.resize(static_cast<size_t>(out.train.imageBytes()));
    for (double& v : m) v = mean(rng);
  }
  fill(means, options.synthetic_train_size, rng, out.train);
  fill(means, options.synthetic_test_size, rng, out.test);
  out.num_classes = options.synthetic_classes;
  // Pixels are about uniform on [48, 208] plus noise: mean 0.5, std ~0.24 on the 0..1 scale.
  out.stats.mean.assign(options.synthetic_shape[0], 0.5f);
  out.stats.stddev.assign(options.synthetic_shape[0], 0.24f);
  out.description =
      absl::StrCat("synthetic (seed ", options.seed, "): ", out.train.size(), " train, ",
                   out.test.size(), " test images of ", out.train.channels, "x", out.train.height,
                   "x", out.train.width, ", ", out.num_classes, " classes");
  return out;
}

}  // namespace sparseps

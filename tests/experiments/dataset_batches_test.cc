// Batches as tensors: normalization and CIFAR augmentation against a plain reference, JPEG
// decoding (color and grayscale) and the Imagenette pipeline on JPEGs written here with
// libjpeg, the factory's errors, and the real samples in ../shared/data when present.

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "experiments/datasets/dense_dataset.h"
#include "experiments/datasets/imagenette_dataset.h"
#include "experiments/datasets/jpeg_decode.h"
#include "experiments/datasets/make_dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/temp_dir.h"

// jpeglib.h needs size_t and FILE declared before it.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
// clang-format on

namespace sparseps {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Encodes an HWC image with `channels` 1 (grayscale) or 3 (RGB) with libjpeg.
std::vector<uint8_t> encodeJpeg(const std::vector<uint8_t>& pixels, int h, int w, int channels,
                                int quality = 95) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels.data()) +
                   static_cast<size_t>(cinfo.next_scanline) * w * channels;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<uint8_t> out(buffer, buffer + size);
  jpeg_destroy_compress(&cinfo);
  free(buffer);
  return out;
}

// A smooth image (JPEG keeps it to within a few levels): a gradient plus a per-image offset.
std::vector<uint8_t> smoothImage(int h, int w, int channels, int offset) {
  std::vector<uint8_t> px(static_cast<size_t>(h) * w * channels);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        px[(static_cast<size_t>(y) * w + x) * channels + c] =
            static_cast<uint8_t>((offset + 60 * c + y * 100 / h + x * 50 / w) % 256);
      }
    }
  }
  return px;
}

void writeFile(const fs::path& p, const std::vector<uint8_t>& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

TEST(JpegDecodeTest, ColorAndGrayscale) {
  const int h = 48, w = 64;
  std::vector<uint8_t> rgb = smoothImage(h, w, 3, 10);
  absl::StatusOr<RgbImage> a = decodeJpeg(encodeJpeg(rgb, h, w, 3), "rgb");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->height, h);
  EXPECT_EQ(a->width, w);
  EXPECT_EQ(a->source_channels, 3);
  ASSERT_EQ(a->pixels.size(), rgb.size());
  double err = 0;
  for (size_t i = 0; i < rgb.size(); ++i) err += std::abs(a->pixels[i] - rgb[i]);
  EXPECT_LT(err / rgb.size(), 4.0);

  std::vector<uint8_t> gray = smoothImage(h, w, 1, 30);
  absl::StatusOr<RgbImage> g = decodeJpeg(encodeJpeg(gray, h, w, 1), "gray");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->source_channels, 1);
  ASSERT_EQ(g->pixels.size(), gray.size() * 3);
  for (size_t p = 0; p < gray.size(); ++p) {
    EXPECT_EQ(g->pixels[3 * p], g->pixels[3 * p + 1]);
    EXPECT_EQ(g->pixels[3 * p], g->pixels[3 * p + 2]);
    EXPECT_NEAR(g->pixels[3 * p], gray[p], 8);
  }
  // DCT scaling: the smallest M/8 scale whose shorter side is still >= 20 is 4/8 (24 rows).
  absl::StatusOr<RgbImage> s = decodeJpeg(encodeJpeg(rgb, h, w, 3), "rgb", 20);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->height, 24);
  EXPECT_EQ(s->width, 32);
}

TEST(JpegDecodeTest, BrokenFilesAreErrors) {
  std::vector<uint8_t> jpeg = encodeJpeg(smoothImage(64, 64, 3, 0), 64, 64, 3);
  std::vector<uint8_t> truncated(jpeg.begin(), jpeg.begin() + jpeg.size() / 2);
  absl::StatusOr<RgbImage> t = decodeJpeg(truncated, "half.JPEG");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("half.JPEG"));
  EXPECT_THAT(t.status().message(), ::testing::AnyOf(HasSubstr("truncated"), HasSubstr("corrupt")));
  std::vector<uint8_t> not_jpeg = {'G', 'I', 'F', '8', '9', 'a', 0, 0};
  EXPECT_THAT(decodeJpeg(not_jpeg, "x").status().message(), HasSubstr("not a JPEG"));
  std::vector<uint8_t> header_only(jpeg.begin(), jpeg.begin() + 30);
  EXPECT_FALSE(decodeJpeg(header_only, "x").ok());
  EXPECT_THAT(decodeJpegFile("/nonexistent/a.JPEG").status().message(), HasSubstr("cannot open"));
}

// A small fixed-shape data set with random pixels, for batch tests.
ImageSplits randomSplits(int64_t n_train, int64_t n_test, int64_t c, int64_t h, int64_t w,
                         std::mt19937_64& rng) {
  ImageSplits s;
  std::uniform_int_distribution<int> byte(0, 255), label(0, 9);
  for (auto [set, n] : {std::pair{&s.train, n_train}, std::pair{&s.test, n_test}}) {
    set->channels = c;
    set->height = h;
    set->width = w;
    for (int64_t i = 0; i < n * c * h * w; ++i)
      set->pixels.push_back(static_cast<uint8_t>(byte(rng)));
    for (int64_t i = 0; i < n; ++i) set->labels.push_back(label(rng));
  }
  s.num_classes = 10;
  for (int64_t ch = 0; ch < c; ++ch) {
    s.stats.mean.push_back(0.3f + 0.1f * ch);
    s.stats.stddev.push_back(0.2f + 0.05f * ch);
  }
  return s;
}

TEST(DenseDatasetTest, NormalizedBatchesMatchReference) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937_64 rng(seed);
  ImageSplits splits = randomSplits(50, 20, 3, 8, 6, rng);
  const ImageSplits copy = splits;
  DenseDataset ds("t", std::move(splits), DenseAugment::kPadCropFlip, seed, true);
  EXPECT_EQ(ds.imageShape(), (std::vector<int64_t>{3, 8, 6}));
  BatchIterator it = ds.testBatches(8);
  EXPECT_EQ(it.numBatches(), 3);
  Batch b;
  int64_t seen = 0;
  while (true) {
    absl::StatusOr<bool> more = it.next(&b);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ASSERT_EQ(b.images.scalar_type(), at::kFloat);
    ASSERT_EQ(b.labels.scalar_type(), at::kLong);
    const int64_t n = b.images.size(0);
    auto img = b.images.accessor<float, 4>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t idx = seen + i;  // test split is in index order
      EXPECT_EQ(b.labels[i].item<int64_t>(), copy.test.labels[idx]);
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t y = 0; y < 8; ++y) {
          for (int64_t x = 0; x < 6; ++x) {
            const float byte = copy.test.pixels[((idx * 3 + c) * 8 + y) * 6 + x];
            const float want = (byte / 255.0f - copy.stats.mean[c]) / copy.stats.stddev[c];
            ASSERT_NEAR(img[i][c][y][x], want, 1e-5);
          }
        }
      }
    }
    seen += n;
  }
  EXPECT_EQ(seen, 20);
}

TEST(DenseDatasetTest, PadCropFlipIsAShiftedPossiblyMirroredWindow) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937_64 rng(seed);
  ImageSplits splits = randomSplits(64, 4, 1, 12, 12, rng);
  const ImageSplits copy = splits;
  DenseDataset ds("t", std::move(splits), DenseAugment::kPadCropFlip, seed, true);
  std::vector<int64_t> idx(64);
  for (int64_t i = 0; i < 64; ++i) idx[i] = i;
  absl::StatusOr<Batch> b = ds.getBatch(Split::kTrain, idx, true, seed);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->images.sizes(), (at::IntArrayRef{64, 1, 12, 12}));
  const float pad = (0.0f - copy.stats.mean[0]) / copy.stats.stddev[0];
  auto img = b->images.accessor<float, 4>();
  int changed = 0;
  for (int64_t i = 0; i < 64; ++i) {
    // Exactly one (dy, dx, mirror) in [-4, 4]^2 x {no, yes} explains the output.
    int matches = 0;
    for (int dy = -4; dy <= 4; ++dy) {
      for (int dx = -4; dx <= 4; ++dx) {
        for (int mirror = 0; mirror < 2; ++mirror) {
          bool ok = true;
          for (int y = 0; y < 12 && ok; ++y) {
            for (int x = 0; x < 12 && ok; ++x) {
              const int sy = y + dy, sx = (mirror ? 11 - x : x) + dx;
              const float byte = (sy >= 0 && sy < 12 && sx >= 0 && sx < 12)
                                     ? copy.train.pixels[(i * 12 + sy) * 12 + sx]
                                     : -1.0f;
              const float want =
                  byte < 0 ? pad : (byte / 255.0f - copy.stats.mean[0]) / copy.stats.stddev[0];
              ok = std::abs(img[i][0][y][x] - want) < 1e-5;
            }
          }
          if (ok) {
            ++matches;
            changed += dy != 0 || dx != 0 || mirror;
          }
        }
      }
    }
    EXPECT_EQ(matches, 1) << "example " << i;
  }
  EXPECT_GT(changed, 32);
  // The same seed gives the same batch; no augmentation gives the plain images.
  absl::StatusOr<Batch> again = ds.getBatch(Split::kTrain, idx, true, seed);
  EXPECT_TRUE(at::equal(again->images, b->images));
  absl::StatusOr<Batch> plain = ds.getBatch(Split::kTrain, idx, false, seed);
  EXPECT_FALSE(at::equal(plain->images, b->images));
}

TEST(DenseDatasetTest, TrainShardsAreDisjointAndCover) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937_64 rng(seed);
  ImageSplits splits = randomSplits(103, 4, 1, 4, 4, rng);
  // Make every image identifiable by its first pixel pair.
  for (int64_t i = 0; i < 103; ++i) {
    splits.train.pixels[i * 16] = static_cast<uint8_t>(i);
    splits.train.pixels[i * 16 + 1] = 0;
  }
  splits.stats = {{0.0f}, {1.0f}};
  DenseDataset ds("t", std::move(splits), DenseAugment::kNone, seed, true);
  std::vector<int64_t> ids;
  for (int shard = 0; shard < 4; ++shard) {
    BatchIterator it = ds.trainBatches(shard, 4, /*epoch=*/3, /*batch_size=*/10, false);
    Batch b;
    while (*it.next(&b)) {
      for (int64_t i = 0; i < b.images.size(0); ++i) {
        ids.push_back(std::lround(b.images[i][0][0][0].item<float>() * 255.0f));
      }
    }
  }
  std::sort(ids.begin(), ids.end());
  std::vector<int64_t> expect(103);
  for (int64_t i = 0; i < 103; ++i) expect[i] = i;
  EXPECT_EQ(ids, expect);
  BatchIterator dropping = ds.trainBatches(0, 4, 0, 10, /*drop_last=*/true);
  EXPECT_EQ(dropping.numBatches(), 2);  // shard 0 has 25 examples
}

// A resumed worker skips the batches it had trained on; the rest, augmentation included,
// are those an uninterrupted epoch gives.
TEST(DenseDatasetTest, SkippedBatchesLeaveTheRestOfTheEpochAsItWas) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937_64 rng(seed);
  DenseDataset ds("t", randomSplits(53, 4, 1, 12, 12, rng), DenseAugment::kPadCropFlip, seed,
                  true);
  std::vector<at::Tensor> whole;
  BatchIterator all = ds.trainBatches(1, 2, /*epoch=*/2, /*batch_size=*/5, false);
  Batch b;
  while (*all.next(&b)) whole.push_back(b.images);
  ASSERT_EQ(whole.size(), 6u);  // half of 53 examples: five batches of 5 and a short one
  for (int64_t skipped : {0, 1, 4, 5, 6, 9}) {
    SCOPED_TRACE(absl::StrCat("skipped ", skipped));
    BatchIterator rest = ds.trainBatches(1, 2, 2, 5, false);
    rest.skip(skipped);
    size_t i = static_cast<size_t>(std::min<int64_t>(skipped, 6));
    while (*rest.next(&b)) {
      ASSERT_LT(i, whole.size());
      EXPECT_TRUE(at::equal(b.images, whole[i])) << "batch " << i;
      ++i;
    }
    EXPECT_EQ(i, whole.size());
  }
}

// Writes an Imagenette-style tree: 3 classes, `per_class` train and 2 val JPEGs each, sizes
// varying, one grayscale JPEG per split.
void writeImagenette(const fs::path& root, int per_class) {
  const char* wnids[] = {"n01440764", "n02102040", "n02979186"};
  int k = 0;
  for (const char* split : {"train", "val"}) {
    const int n = std::string(split) == "train" ? per_class : 2;
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < n; ++i, ++k) {
        const bool gray = c == 1 && i == 0;
        const int h = 40 + 7 * (k % 3), w = 50 + 11 * (k % 2);
        std::vector<uint8_t> px = smoothImage(h, w, gray ? 1 : 3, 40 * c + i);
        writeFile(root / split / wnids[c] / absl::StrCat(wnids[c], "_", i, ".JPEG"),
                  encodeJpeg(px, h, w, gray ? 1 : 3));
      }
    }
  }
}

TEST(ImagenetteTest, WrittenJpegsGiveNormalizedBatches) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  testing::TempDir dir("sparseps_dsbatch_");
  writeImagenette(dir.path(), 4);
  DatasetOptions o;
  o.setSeed(seed).setImageSize(32);
  absl::StatusOr<std::unique_ptr<Dataset>> ds = makeDataset("imagenette", dir.str(), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(Split::kTrain), 12);
  EXPECT_EQ((*ds)->size(Split::kTest), 6);
  EXPECT_EQ((*ds)->numClasses(), 3);
  EXPECT_EQ((*ds)->imageShape(), (std::vector<int64_t>{3, 32, 32}));
  EXPECT_TRUE(at::equal((*ds)->labels(Split::kTest), at::tensor({0, 0, 1, 1, 2, 2}, at::kLong)));
  BatchIterator train = (*ds)->trainBatches(0, 1, 0, 5);
  Batch b;
  int64_t n = 0;
  while (*train.next(&b)) {
    EXPECT_EQ(b.images.size(1), 3);
    EXPECT_EQ(b.images.size(2), 32);
    EXPECT_EQ(b.images.size(3), 32);
    n += b.images.size(0);
  }
  EXPECT_EQ(n, 12);
  auto* im = dynamic_cast<ImagenetteDataset*>(ds->get());
  ASSERT_NE(im, nullptr);
  EXPECT_EQ(im->grayscaleDecoded(), 1);  // the train one; val's is not decoded yet

  // Validation: resize to S = round(32 * 256 / 224) = 37 on the shorter side, center crop 32.
  // Compare the first val image with that pipeline run here on the decoded JPEG.
  absl::StatusOr<Batch> v = (*ds)->getBatch(Split::kTest, std::vector<int64_t>{0}, false, 0);
  ASSERT_TRUE(v.ok()) << v.status();
  absl::StatusOr<RgbImage> rgb =
      decodeJpegFile((dir.path() / "val/n01440764/n01440764_0.JPEG").string());
  ASSERT_TRUE(rgb.ok());
  at::Tensor chw = at::from_blob(rgb->pixels.data(), {rgb->height, rgb->width, 3}, at::kByte)
                       .permute({2, 0, 1})
                       .to(at::kFloat)
                       .unsqueeze(0);
  const double shorter = std::min(rgb->height, rgb->width);
  at::Tensor r =
      at::_upsample_bilinear2d_aa(
          chw, {std::lround(rgb->height * 37 / shorter), std::lround(rgb->width * 37 / shorter)},
          false)
          .round()
          .clamp(0, 255);
  const int64_t top = std::lround((r.size(2) - 32) / 2.0),
                left = std::lround((r.size(3) - 32) / 2.0);
  at::Tensor want = r.narrow(2, top, 32).narrow(3, left, 32);
  want = (want / 255.0 - at::tensor({0.485, 0.456, 0.406}).view({1, 3, 1, 1})) /
         at::tensor({0.229, 0.224, 0.225}).view({1, 3, 1, 1});
  EXPECT_TRUE(at::allclose(v->images, want.to(at::kFloat), 1e-4, 1e-4));
  // Grayscale val image: all three channels carry the same bytes.
  absl::StatusOr<Batch> g = (*ds)->getBatch(Split::kTest, std::vector<int64_t>{2}, false, 0);
  ASSERT_TRUE(g.ok());
  at::Tensor bytes = g->images[0] * at::tensor({0.229f, 0.224f, 0.225f}).view({3, 1, 1}) +
                     at::tensor({0.485f, 0.456f, 0.406f}).view({3, 1, 1});
  EXPECT_TRUE(at::allclose(bytes[0], bytes[1], 1e-4, 1e-4));
  EXPECT_TRUE(at::allclose(bytes[0], bytes[2], 1e-4, 1e-4));
  EXPECT_EQ(im->grayscaleDecoded(), 2);
}

TEST(ImagenetteTest, MissingAndBrokenData) {
  testing::TempDir dir("sparseps_dsbatch_");
  absl::StatusOr<std::unique_ptr<Dataset>> ds =
      makeDataset("imagenette", dir.str() + "/none", DatasetOptions());
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(), HasSubstr("Imagenette not found in " + dir.str() + "/none"));
  EXPECT_THAT(ds.status().message(), HasSubstr("experiments/fetch-data imagenette --dir"));
  writeImagenette(dir.path(), 2);
  fs::remove_all(dir.path() / "val");
  ds = makeDataset("imagenette", dir.str(), DatasetOptions());
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(), HasSubstr("no val/ folder"));
  writeImagenette(dir.path(), 2);
  // A truncated JPEG fails when it is decoded: at open with preload, else in its batch.
  const fs::path bad = dir.path() / "train/n02979186/n02979186_1.JPEG";
  fs::resize_file(bad, fs::file_size(bad) / 2);
  ds = makeDataset("imagenette", dir.str(), DatasetOptions().setPreload(true).setImageSize(32));
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(), HasSubstr(bad.string()));
  ds = makeDataset("imagenette", dir.str(), DatasetOptions().setImageSize(32));
  ASSERT_TRUE(ds.ok()) << ds.status();
  BatchIterator it = (*ds)->trainBatches(0, 1, 0, 6);
  Batch b;
  absl::StatusOr<bool> more = it.next(&b);
  ASSERT_FALSE(more.ok());
  EXPECT_THAT(more.status().message(), HasSubstr("truncated"));
}

// A dry run decodes every file once and caches nothing; it reports what the cache of
// decoded images would hold: each image with its shorter side resized to
// round(image_size * 256 / 224), 3 bytes per pixel.
TEST(ImagenetteTest, CheckAllDecodesEveryFileAndSumsTheCacheItWouldFill) {
  testing::TempDir dir("sparseps_dsbatch_");
  writeImagenette(dir.path(), 3);
  auto ds = makeDataset("imagenette", dir.str(), DatasetOptions().setImageSize(32));
  ASSERT_TRUE(ds.ok()) << ds.status();
  const double side = 37;  // round(32 * 256 / 224)
  int64_t expect[2] = {0, 0};
  for (int s = 0; s < 2; ++s) {
    for (const auto& entry : fs::recursive_directory_iterator(dir.path() / (s ? "val" : "train"))) {
      if (!entry.is_regular_file()) continue;
      absl::StatusOr<RgbImage> rgb = decodeJpegFile(entry.path().string());
      ASSERT_TRUE(rgb.ok()) << rgb.status();
      const double shorter = std::min(rgb->height, rgb->width);
      expect[s] += 3 * std::lround(rgb->height * side / shorter) *
                   std::lround(rgb->width * side / shorter);
    }
  }
  absl::StatusOr<Dataset::Footprint> footprint = (*ds)->checkAll();
  ASSERT_TRUE(footprint.ok()) << footprint.status();
  EXPECT_EQ(footprint->train_bytes, expect[0]);
  EXPECT_EQ(footprint->test_bytes, expect[1]);
  EXPECT_EQ(dynamic_cast<ImagenetteDataset&>(**ds).grayscaleDecoded(), 0);  // nothing cached

  const fs::path bad = dir.path() / "val/n02102040/n02102040_1.JPEG";
  fs::resize_file(bad, fs::file_size(bad) / 2);
  footprint = (*ds)->checkAll();
  ASSERT_FALSE(footprint.ok());
  EXPECT_THAT(footprint.status().message(), HasSubstr(bad.string()));
}

// A bounded evaluation scores a fixed seeded sample of the test split: the same examples at
// every call, distinct, in index order, drawn from the whole split (every class).
TEST(DatasetTest, BoundedTestBatchesAreAFixedSeededSample) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  DatasetOptions o;
  o.setSeed(seed).setSyntheticTrainSize(64).setSyntheticTestSize(1000).setSyntheticShape({1, 4, 4});
  auto ds = makeDataset("synthetic", "", o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  const auto sample = [&](int64_t limit, std::vector<int64_t>* labels) {
    BatchIterator it = (*ds)->testBatches(64, limit);
    std::vector<std::vector<float>> images;  // its 16 pixels identify an example
    Batch b;
    while (*it.next(&b)) {
      for (int64_t i = 0; i < b.labels.size(0); ++i) {
        const at::Tensor x = b.images[i].flatten().contiguous();
        images.emplace_back(x.data_ptr<float>(), x.data_ptr<float>() + x.numel());
        if (labels) labels->push_back(b.labels[i].item<int64_t>());
      }
    }
    return images;
  };
  std::vector<int64_t> labels;
  const auto a = sample(300, &labels);
  EXPECT_EQ(a.size(), 300u);
  EXPECT_EQ(sample(300, nullptr), a);
  EXPECT_EQ(std::set<int64_t>(labels.begin(), labels.end()).size(), 10u);
  // In index order: the sample is a subsequence of the whole split.
  const auto all = sample(0, nullptr);
  ASSERT_EQ(all.size(), 1000u);
  size_t j = 0;
  for (const auto& x : a) {
    while (j < all.size() && all[j] != x) ++j;
    ASSERT_LT(j, all.size()) << "not a subsequence of the split in index order";
    ++j;
  }
  EXPECT_EQ(sample(1000, nullptr), all);
  EXPECT_EQ(sample(5000, nullptr), all);
}

TEST(MakeDatasetTest, UnknownNameListsKnownOnes) {
  absl::StatusOr<std::unique_ptr<Dataset>> ds = makeDataset("mnist", "", DatasetOptions());
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ds.status().message(), HasSubstr("fashion-mnist, cifar10, imagenette, synthetic"));
  EXPECT_FALSE(makeDataset("synthetic", "", DatasetOptions().setImageSize(1)).ok());
}

TEST(MakeDatasetTest, Synthetic) {
  DatasetOptions o;
  o.setSyntheticTrainSize(64).setSyntheticTestSize(32).setSyntheticShape({3, 16, 16});
  absl::StatusOr<std::unique_ptr<Dataset>> ds = makeDataset("synthetic", "", o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(Split::kTrain), 64);
  EXPECT_EQ((*ds)->numClasses(), 10);
  BatchIterator it = (*ds)->trainBatches(1, 2, 0, 16);
  Batch b;
  ASSERT_TRUE(*it.next(&b));
  EXPECT_EQ(b.images.sizes(), (at::IntArrayRef{16, 3, 16, 16}));
  EXPECT_EQ(b.labels.sizes(), (at::IntArrayRef{16}));
  EXPECT_LT(std::abs(b.images.mean().item<float>()), 0.5);
}

// The real samples in ../shared/data (skipped where absent).
const fs::path kShared = SPARSEPS_SHARED_DATA;

TEST(SharedSampleTest, Cifar10) {
  const fs::path dir = kShared / "cifar10-sample";
  if (!fs::exists(dir)) GTEST_SKIP() << "no CIFAR-10 sample at " << dir;
  absl::StatusOr<std::unique_ptr<Dataset>> ds = makeDataset("cifar10", dir.string(), {});
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(Split::kTrain), 10000);
  EXPECT_EQ((*ds)->size(Split::kTest), 2000);
  EXPECT_EQ((*ds)->imageShape(), (std::vector<int64_t>{3, 32, 32}));
  EXPECT_THAT((*ds)->description(), HasSubstr("data_batch_1.bin, test_batch.bin"));
  at::Tensor counts = at::bincount((*ds)->labels(Split::kTest));
  EXPECT_TRUE(at::equal(counts, at::full({10}, 200, at::kLong)));
  // Normalized with the CIFAR-10 statistics: the test split has mean ~0, std ~1 per channel.
  BatchIterator it = (*ds)->testBatches(2000);
  Batch b;
  ASSERT_TRUE(*it.next(&b));
  at::Tensor mean = b.images.mean({0, 2, 3}), stddev = b.images.std({0, 2, 3});
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(mean[c].item<float>(), 0.0f, 0.05f);
    EXPECT_NEAR(stddev[c].item<float>(), 1.0f, 0.05f);
  }
  BatchIterator train = (*ds)->trainBatches(2, 4, 0, 128);
  EXPECT_EQ(train.numExamples(), 2500);
  ASSERT_TRUE(*train.next(&b));
  EXPECT_EQ(b.images.sizes(), (at::IntArrayRef{128, 3, 32, 32}));
}

TEST(SharedSampleTest, Imagenette) {
  const fs::path dir = kShared / "imagenette-sample";
  if (!fs::exists(dir)) GTEST_SKIP() << "no Imagenette sample at " << dir;
  absl::StatusOr<std::unique_ptr<Dataset>> ds =
      makeDataset("imagenette", dir.string(), DatasetOptions().setPreload(true));
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(Split::kTrain), 200);
  EXPECT_EQ((*ds)->size(Split::kTest), 100);
  EXPECT_EQ((*ds)->numClasses(), 10);
  EXPECT_EQ((*ds)->imageShape(), (std::vector<int64_t>{3, 224, 224}));
  EXPECT_TRUE(at::equal(at::bincount((*ds)->labels(Split::kTest)), at::full({10}, 10, at::kLong)));
  auto* im = dynamic_cast<ImagenetteDataset*>(ds->get());
  ASSERT_NE(im, nullptr);
  EXPECT_GT(im->grayscaleDecoded(), 0);
  std::cout << "Imagenette sample: " << im->grayscaleDecoded() << " grayscale JPEGs\n";
  Batch b;
  BatchIterator train = (*ds)->trainBatches(0, 2, 0, 32);
  EXPECT_EQ(train.numExamples(), 100);
  ASSERT_TRUE(*train.next(&b));
  EXPECT_EQ(b.images.sizes(), (at::IntArrayRef{32, 3, 224, 224}));
  EXPECT_TRUE(at::isfinite(b.images).all().item<bool>());
  BatchIterator val = (*ds)->testBatches(50);
  ASSERT_TRUE(*val.next(&b));
  EXPECT_EQ(b.images.sizes(), (at::IntArrayRef{50, 3, 224, 224}));
}

// Debian's dataset-fashion-mnist, the driver's default (skipped where not installed).
TEST(InstalledDataTest, FashionMnistDefaultDir) {
  if (!fs::exists(defaultDataDir("fashion-mnist"))) GTEST_SKIP() << "dataset-fashion-mnist absent";
  absl::StatusOr<std::unique_ptr<Dataset>> ds = makeDataset("fashion-mnist", "", {});
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(Split::kTrain), 60000);
  EXPECT_EQ((*ds)->size(Split::kTest), 10000);
  EXPECT_EQ((*ds)->imageShape(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_TRUE(
      at::equal(at::bincount((*ds)->labels(Split::kTest)), at::full({10}, 1000, at::kLong)));
  BatchIterator it = (*ds)->testBatches(10000);
  Batch b;
  ASSERT_TRUE(*it.next(&b));
  EXPECT_NEAR(b.images.mean().item<float>(), 0.0f, 0.05f);
  EXPECT_NEAR(b.images.std().item<float>(), 1.0f, 0.05f);
}

}  // namespace
}  // namespace sparseps

// Readers of the data set files (IDX gz, CIFAR-10 binary batches), sharding and synthetic data:
// written here in the real formats from random contents, read back and compared byte for byte;
// broken files give clear errors.

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "experiments/datasets/cifar10.h"
#include "experiments/datasets/fashion_mnist.h"
#include "experiments/datasets/idx_file.h"
#include "experiments/datasets/shard.h"
#include "experiments/datasets/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/temp_dir.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void writeBytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> idxBytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(d >> s));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void writeGz(const fs::path& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.string().c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

std::vector<uint8_t> randomBytes(size_t n, std::mt19937_64& rng, int max = 255) {
  std::uniform_int_distribution<int> d(0, max);
  std::vector<uint8_t> out(n);
  for (uint8_t& b : out) b = static_cast<uint8_t>(d(rng));
  return out;
}

struct FakeMnist {
  std::vector<uint8_t> train_images, train_labels, test_images, test_labels;
};

FakeMnist writeFashionMnist(const fs::path& dir, int n_train, int n_test, std::mt19937_64& rng) {
  FakeMnist m{randomBytes(n_train * 784, rng), randomBytes(n_train, rng, 9),
              randomBytes(n_test * 784, rng), randomBytes(n_test, rng, 9)};
  const uint32_t tr = n_train, te = n_test;
  writeGz(dir / "train-images-idx3-ubyte.gz", idxBytes({tr, 28, 28}, m.train_images));
  writeGz(dir / "train-labels-idx1-ubyte.gz", idxBytes({tr}, m.train_labels));
  writeGz(dir / "t10k-images-idx3-ubyte.gz", idxBytes({te, 28, 28}, m.test_images));
  writeGz(dir / "t10k-labels-idx1-ubyte.gz", idxBytes({te}, m.test_labels));
  return m;
}

class DatasetFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  testing::TempDir dir_{"sparseps_dsfiles_"};
};

TEST_F(DatasetFilesTest, FashionMnistRoundTrip) {
  SCOPED_TRACE(absl::StrCat("seed ", seed_));
  FakeMnist m = writeFashionMnist(dir_.path(), 37, 11, rng_);
  absl::StatusOr<ImageSplits> s = loadFashionMnist(dir_.str());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_classes, 10);
  EXPECT_EQ(s->train.size(), 37);
  EXPECT_EQ(s->test.size(), 11);
  EXPECT_EQ(s->train.channels, 1);
  EXPECT_EQ(s->train.height, 28);
  EXPECT_EQ(s->train.width, 28);
  EXPECT_EQ(s->train.pixels, m.train_images);
  EXPECT_EQ(s->test.pixels, m.test_images);
  EXPECT_EQ(s->train.labels, std::vector<int64_t>(m.train_labels.begin(), m.train_labels.end()));
  EXPECT_EQ(s->test.labels, std::vector<int64_t>(m.test_labels.begin(), m.test_labels.end()));
}

TEST_F(DatasetFilesTest, FashionMnistMissingSaysHowToInstall) {
  absl::StatusOr<ImageSplits> s = loadFashionMnist(dir_.str() + "/nope");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr(dir_.str() + "/nope"));
  EXPECT_THAT(s.status().message(), HasSubstr("apt-get install dataset-fashion-mnist"));
  EXPECT_THAT(s.status().message(), HasSubstr("train-images-idx3-ubyte"));
}

TEST_F(DatasetFilesTest, FashionMnistOneFileMissing) {
  writeFashionMnist(dir_.path(), 5, 5, rng_);
  fs::remove(dir_.path() / "t10k-labels-idx1-ubyte.gz");
  absl::StatusOr<ImageSplits> s = loadFashionMnist(dir_.str());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("t10k-labels-idx1-ubyte"));
}

TEST_F(DatasetFilesTest, IdxTruncatedGzip) {
  SCOPED_TRACE(absl::StrCat("seed ", seed_));
  writeFashionMnist(dir_.path(), 50, 5, rng_);
  const fs::path p = dir_.path() / "train-images-idx3-ubyte.gz";
  fs::resize_file(p, fs::file_size(p) / 2);
  absl::StatusOr<IdxArray> a = readIdxFile(p.string(), 3);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(a.status().message(), HasSubstr(p.string()));
  EXPECT_FALSE(loadFashionMnist(dir_.str()).ok());
}

TEST_F(DatasetFilesTest, IdxTruncatedData) {
  // A complete gzip stream whose IDX header promises more bytes than follow.
  const fs::path p = dir_.path() / "x.gz";
  std::vector<uint8_t> b = idxBytes({10, 28, 28}, randomBytes(9 * 784, rng_));
  writeGz(p, b);
  absl::StatusOr<IdxArray> a = readIdxFile(p.string(), 3);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("truncated"));
}

TEST_F(DatasetFilesTest, IdxBadMagic) {
  const fs::path p = dir_.path() / "x.gz";
  std::vector<uint8_t> b = idxBytes({4}, {1, 2, 3, 4});
  b[2] = 0x0D;  // float data, not unsigned bytes
  writeGz(p, b);
  absl::StatusOr<IdxArray> a = readIdxFile(p.string(), 1);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("bad magic"));
  // The wrong number of dimensions is a bad magic too.
  writeGz(p, idxBytes({4}, {1, 2, 3, 4}));
  EXPECT_THAT(readIdxFile(p.string(), 3).status().message(), HasSubstr("bad magic"));
  // A plain (uncompressed) IDX file is read as well.
  writeBytes(p, idxBytes({4}, {1, 2, 3, 4}));
  absl::StatusOr<IdxArray> plain = readIdxFile(p.string(), 1);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->data, (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST_F(DatasetFilesTest, FashionMnistLabelOutOfRange) {
  writeFashionMnist(dir_.path(), 5, 5, rng_);
  writeGz(dir_.path() / "train-labels-idx1-ubyte.gz", idxBytes({5}, {1, 2, 10, 3, 4}));
  absl::StatusOr<ImageSplits> s = loadFashionMnist(dir_.str());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("label 10"));
}

// CIFAR-10 records: 1 label byte + 3072 image bytes.
std::vector<uint8_t> cifarRecords(int n, std::mt19937_64& rng, std::vector<uint8_t>* pixels,
                                  std::vector<int64_t>* labels) {
  std::vector<uint8_t> out;
  for (int i = 0; i < n; ++i) {
    std::vector<uint8_t> img = randomBytes(3072, rng);
    uint8_t label = randomBytes(1, rng, 9)[0];
    out.push_back(label);
    out.insert(out.end(), img.begin(), img.end());
    pixels->insert(pixels->end(), img.begin(), img.end());
    labels->push_back(label);
  }
  return out;
}

TEST_F(DatasetFilesTest, Cifar10SubsetOfBatches) {
  SCOPED_TRACE(absl::StrCat("seed ", seed_));
  const fs::path base = dir_.path() / "cifar-10-batches-bin";
  fs::create_directories(base);
  std::vector<uint8_t> train_px, test_px;
  std::vector<int64_t> train_l, test_l;
  writeBytes(base / "data_batch_1.bin", cifarRecords(7, rng_, &train_px, &train_l));
  writeBytes(base / "data_batch_3.bin", cifarRecords(5, rng_, &train_px, &train_l));
  writeBytes(base / "test_batch.bin", cifarRecords(4, rng_, &test_px, &test_l));
  absl::StatusOr<ImageSplits> s = loadCifar10(dir_.str());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->train.size(), 12);
  EXPECT_EQ(s->test.size(), 4);
  EXPECT_EQ(s->train.pixels, train_px);
  EXPECT_EQ(s->train.labels, train_l);
  EXPECT_EQ(s->test.pixels, test_px);
  EXPECT_EQ(s->test.labels, test_l);
  EXPECT_THAT(s->description, HasSubstr("data_batch_1.bin, data_batch_3.bin, test_batch.bin"));
  EXPECT_EQ(s->stats.mean, (std::vector<float>{0.4914f, 0.4822f, 0.4465f}));
  EXPECT_EQ(s->stats.stddev, (std::vector<float>{0.2470f, 0.2435f, 0.2616f}));
  // The per-image std: the same pixels and mean, each channel divided by a smaller std.
  absl::StatusOr<ImageSplits> per_image = loadCifar10(dir_.str(), Normalization::kPerImageStd);
  ASSERT_TRUE(per_image.ok()) << per_image.status();
  EXPECT_EQ(per_image->train.pixels, train_px);
  EXPECT_EQ(per_image->stats.mean, s->stats.mean);
  EXPECT_EQ(per_image->stats.stddev, (std::vector<float>{0.2023f, 0.1994f, 0.2010f}));
}

TEST_F(DatasetFilesTest, Cifar10MissingSaysHowToFetch) {
  absl::StatusOr<ImageSplits> s = loadCifar10(dir_.str());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr("CIFAR-10 not found in " + dir_.str()));
  EXPECT_THAT(s.status().message(), HasSubstr("data_batch_1.bin"));
  EXPECT_THAT(s.status().message(),
              HasSubstr("Run: experiments/fetch-data cifar10 --dir " + dir_.str()));
  // Train batches present but no test batch.
  const fs::path base = dir_.path() / "cifar-10-batches-bin";
  fs::create_directories(base);
  std::vector<uint8_t> px;
  std::vector<int64_t> l;
  writeBytes(base / "data_batch_1.bin", cifarRecords(2, rng_, &px, &l));
  s = loadCifar10(dir_.str());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("test_batch.bin"));
}

TEST_F(DatasetFilesTest, Cifar10TruncatedAndBadLabel) {
  const fs::path base = dir_.path() / "cifar-10-batches-bin";
  fs::create_directories(base);
  std::vector<uint8_t> px;
  std::vector<int64_t> l;
  std::vector<uint8_t> rec = cifarRecords(3, rng_, &px, &l);
  writeBytes(base / "test_batch.bin", rec);
  rec.resize(rec.size() - 100);
  writeBytes(base / "data_batch_1.bin", rec);
  absl::StatusOr<ImageSplits> s = loadCifar10(dir_.str());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.status().message(), HasSubstr("data_batch_1.bin"));
  EXPECT_THAT(s.status().message(), HasSubstr("truncated"));
  rec = cifarRecords(2, rng_, &px, &l);
  rec[3073] = 200;  // label of the second record
  writeBytes(base / "data_batch_1.bin", rec);
  s = loadCifar10(dir_.str());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("label 200"));
}

TEST(DatasetShardTest, DisjointCoveringAndReshuffled) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  for (int64_t n : {1, 10, 101, 1000}) {
    for (int shards : {1, 3, 4}) {
      if (shards > n) continue;
      std::vector<int64_t> all;
      for (int s = 0; s < shards; ++s) {
        std::vector<int64_t> a = shardIndices(n, s, shards, seed);
        EXPECT_LE(std::abs(static_cast<int64_t>(a.size()) - n / shards), 1);
        std::vector<int64_t> e0 = epochOrder(n, s, shards, seed, 0);
        std::vector<int64_t> e1 = epochOrder(n, s, shards, seed, 1);
        EXPECT_EQ(e0, epochOrder(n, s, shards, seed, 0));  // deterministic
        if (e0.size() > 20) {
          EXPECT_NE(e0, e1);  // reshuffled per epoch
        }
        std::sort(e0.begin(), e0.end());
        std::sort(e1.begin(), e1.end());
        std::vector<int64_t> sorted = a;
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(e0, sorted);  // an epoch visits exactly the shard
        EXPECT_EQ(e1, sorted);
        all.insert(all.end(), a.begin(), a.end());
      }
      std::sort(all.begin(), all.end());
      std::vector<int64_t> expect(n);
      for (int64_t i = 0; i < n; ++i) expect[i] = i;
      EXPECT_EQ(all, expect) << "n=" << n << " shards=" << shards;
    }
  }
  // Different seeds split differently.
  EXPECT_NE(shardIndices(1000, 0, 4, seed), shardIndices(1000, 0, 4, seed + 1));
}

TEST(SyntheticDataTest, DeterministicBalancedAndLearnable) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  DatasetOptions o;
  o.setSeed(seed)
      .setSyntheticTrainSize(200)
      .setSyntheticTestSize(100)
      .setSyntheticClasses(4)
      .setSyntheticShape({1, 8, 8});
  ImageSplits a = makeSyntheticImages(o);
  ImageSplits b = makeSyntheticImages(o);
  EXPECT_EQ(a.train.pixels, b.train.pixels);
  EXPECT_EQ(a.train.size(), 200);
  EXPECT_EQ(a.test.size(), 100);
  EXPECT_EQ(std::count(a.train.labels.begin(), a.train.labels.end(), 3), 50);
  // Learnable: nearest class mean (estimated on train) classifies most test images.
  const int64_t d = a.train.imageBytes();
  std::vector<std::vector<double>> mean(4, std::vector<double>(d, 0.0));
  for (int64_t i = 0; i < a.train.size(); ++i) {
    for (int64_t p = 0; p < d; ++p) mean[a.train.labels[i]][p] += a.train.pixels[i * d + p] / 50.0;
  }
  int correct = 0;
  for (int64_t i = 0; i < a.test.size(); ++i) {
    int best = 0;
    double best_dist = 1e300;
    for (int c = 0; c < 4; ++c) {
      double dist = 0;
      for (int64_t p = 0; p < d; ++p) {
        double diff = a.test.pixels[i * d + p] - mean[c][p];
        dist += diff * diff;
      }
      if (dist < best_dist) best_dist = dist, best = c;
    }
    correct += best == a.test.labels[i];
  }
  EXPECT_GE(correct, 90);
}

TEST(DatasetOptionsTest, ValidateNamesTheField) {
  EXPECT_TRUE(DatasetOptions().validate().ok());
  EXPECT_THAT(DatasetOptions().setImageSize(2).validate().message(), HasSubstr("image_size"));
  EXPECT_THAT(DatasetOptions().setSyntheticClasses(1).validate().message(),
              HasSubstr("synthetic_classes"));
  EXPECT_THAT(DatasetOptions().setSyntheticShape({3, 32}).validate().message(),
              HasSubstr("synthetic_shape"));
}

}  // namespace
}  // namespace sparseps

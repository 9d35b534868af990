// recomputeBatchNormStatistics against a plain reference: a model whose BatchNorm sees the
// images themselves, so its statistics must equal the average over batches of each batch's
// per-channel mean and unbiased variance; written through the FlatModel's buffer views.

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <memory>

#include "core/torch/flat_model.h"
#include "experiments/datasets/make_dataset.h"
#include "experiments/driver/batch_norm_stats.h"
#include "gtest/gtest.h"

namespace sparseps {
namespace {

// BatchNorm over the input channels, global average pool, linear.
class NormThenLinear : public ImageClassifier {
 public:
  NormThenLinear(int64_t channels, int64_t classes)
      : bn(register_module("bn", torch::nn::BatchNorm2d(channels))),
        fc(register_module("fc", torch::nn::Linear(channels, classes))) {}
  torch::Tensor forward(const torch::Tensor& images) override {
    return fc->forward(bn->forward(images).mean({2, 3}));
  }
  torch::nn::BatchNorm2d bn;
  torch::nn::Linear fc;
};

constexpr int64_t kChannels = 3;
constexpr int64_t kBatch = 16;

std::unique_ptr<Dataset> syntheticData() {
  auto data = makeDataset("synthetic", "",
                          DatasetOptions()
                              .setSeed(7)
                              .setSyntheticTrainSize(100)
                              .setSyntheticTestSize(10)
                              .setSyntheticShape({kChannels, 4, 4}));
  EXPECT_TRUE(data.ok()) << data.status();
  return std::move(*data);
}

// The average over the first `batches` batches of each batch's per-channel statistics.
std::pair<torch::Tensor, torch::Tensor> referenceStatistics(BatchIterator it, int64_t batches) {
  torch::Tensor mean = torch::zeros({kChannels}, torch::kFloat64);
  torch::Tensor var = torch::zeros({kChannels}, torch::kFloat64);
  Batch batch;
  int64_t n = 0;
  while (n < batches && *it.next(&batch)) {
    torch::Tensor x = batch.images.to(torch::kFloat64).transpose(0, 1).reshape({kChannels, -1});
    mean += x.mean(1);
    var += x.var(1, /*unbiased=*/true);
    ++n;
  }
  return {mean / n, var / n};
}

TEST(BatchNormStatsTest, EqualsTheAverageOfBatchStatisticsWrittenThroughTheFlatBuffer) {
  auto data = syntheticData();
  auto net = std::make_shared<NormThenLinear>(kChannels, 10);
  auto flat = FlatModel::create(net);
  ASSERT_TRUE(flat.ok()) << flat.status();
  net->eval();
  for (float& v : flat->buffers()) v = 5.0f;  // stale statistics to be replaced

  auto used = recomputeBatchNormStatistics(*net, data->trainBatches(0, 2, 0, kBatch), 2);
  ASSERT_TRUE(used.ok()) << used.status();
  EXPECT_EQ(*used, 2);
  auto [mean, var] = referenceStatistics(data->trainBatches(0, 2, 0, kBatch), 2);

  // The flat buffer holds running_mean then running_var; the module's tensors are views.
  ASSERT_EQ(flat->buffers().size(), static_cast<size_t>(2 * kChannels));
  for (int64_t c = 0; c < kChannels; ++c) {
    EXPECT_NEAR(flat->buffers()[c], mean[c].item<double>(), 1e-5) << "channel " << c;
    EXPECT_NEAR(flat->buffers()[kChannels + c], var[c].item<double>(), 1e-5) << "channel " << c;
  }
  EXPECT_TRUE(torch::allclose(net->bn->running_mean, mean.to(torch::kFloat32), 1e-5, 1e-6));
  EXPECT_FALSE(net->is_training());  // restored
  ASSERT_TRUE(net->bn->options.momentum().has_value());
  EXPECT_DOUBLE_EQ(*net->bn->options.momentum(), 0.1);  // restored

  // Training afterwards uses the momentum again: one batch moves the mean by 10%.
  torch::Tensor before = net->bn->running_mean.clone();
  torch::Tensor images = torch::randn({kBatch, kChannels, 4, 4});
  net->train();
  net->forward(images);
  torch::Tensor expected = 0.9 * before + 0.1 * images.mean({0, 2, 3});
  EXPECT_TRUE(torch::allclose(net->bn->running_mean, expected, 1e-5, 1e-6));
}

TEST(BatchNormStatsTest, UsesEveryBatchWhenFewerThanAskedAndFailsOnAnEmptyShard) {
  auto data = syntheticData();
  auto net = std::make_shared<NormThenLinear>(kChannels, 10);
  BatchIterator all = data->trainBatches(1, 2, 3, kBatch);
  const int64_t available = all.numBatches();
  auto used = recomputeBatchNormStatistics(*net, std::move(all), 1000);
  ASSERT_TRUE(used.ok()) << used.status();
  EXPECT_EQ(*used, available);
  auto [mean, var] = referenceStatistics(data->trainBatches(1, 2, 3, kBatch), 1000);
  EXPECT_TRUE(torch::allclose(net->bn->running_var, var.to(torch::kFloat32), 1e-5, 1e-6));

  auto empty = recomputeBatchNormStatistics(*net, data->trainBatches(5, 2, 0, kBatch), 10);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no training batches"), std::string::npos);
}

}  // namespace
}  // namespace sparseps

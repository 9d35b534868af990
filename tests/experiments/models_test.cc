#include "experiments/models/model_factory.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>
#include <string>

namespace sparseps {
namespace {

std::shared_ptr<ImageClassifier> build(const std::string& name, int64_t classes,
                                       int64_t channels) {
  absl::StatusOr<std::shared_ptr<ImageClassifier>> model =
      makeModel(name, classes, channels);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

int64_t parameterCount(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

std::vector<int64_t> shapeOf(const torch::Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}

// Reference counts: torchvision's resnet50() (25,557,032) and resnet18() (11,689,512),
// kuangliu's ResNet18() (11,173,962) and He et al.'s ResNet-20 with option A (0.27M;
// 269,722 exactly).
TEST(ModelsTest, ParameterCountsMatchTheReferenceModels) {
  EXPECT_EQ(parameterCount(*build("resnet50", 1000, 3)), 25557032);
  EXPECT_EQ(parameterCount(*build("resnet18_cifar", 10, 3)), 11173962);
  EXPECT_EQ(parameterCount(*build("resnet18", 1000, 3)), 11689512);
  EXPECT_EQ(parameterCount(*build("resnet20", 10, 3)), 269722);
  // 144 + 32 (stem) + 4,672 + 14,528 + 57,728 (blocks) + 650 (fc), counted by hand.
  EXPECT_EQ(parameterCount(*build("small_resnet", 10, 1)), 77754);
  // 784 * 256 + 256, 256 * 256 + 256, 256 * 10 + 10.
  EXPECT_EQ(parameterCount(*build("mlp", 10, 1)), 200960 + 65792 + 2570);
}

TEST(ModelsTest, ParameterNamesFollowTorchvision) {
  auto net = build("resnet50", 1000, 3);
  auto params = net->named_parameters();
  ASSERT_NE(params.find("conv1.weight"), nullptr);
  EXPECT_EQ(shapeOf(params["conv1.weight"]), (std::vector<int64_t>{64, 3, 7, 7}));
  ASSERT_NE(params.find("layer1.0.downsample.0.weight"), nullptr);
  EXPECT_EQ(shapeOf(params["layer1.0.downsample.0.weight"]),
            (std::vector<int64_t>{256, 64, 1, 1}));
  ASSERT_NE(params.find("layer2.0.conv2.weight"), nullptr);  // v1.5: stride in the 3x3
  EXPECT_EQ(shapeOf(params["layer4.2.conv3.weight"]), (std::vector<int64_t>{2048, 512, 1, 1}));
  EXPECT_EQ(shapeOf(params["fc.weight"]), (std::vector<int64_t>{1000, 2048}));
  EXPECT_EQ(params.size(), 161u);
  EXPECT_EQ(net->named_buffers().size(), 3u * 53);  // 53 BatchNorms
}

TEST(ModelsTest, ResNet20UsesParameterFreeShortcuts) {
  auto net = build("resnet20", 10, 3);
  for (const auto& item : net->named_parameters()) {
    EXPECT_EQ(item.key().find("downsample"), std::string::npos) << item.key();
  }
}

TEST(ModelsTest, InputChannelsAndClassesShapeTheEnds) {
  auto net = build("small_resnet", 7, 3);
  auto params = net->named_parameters();
  EXPECT_EQ(shapeOf(params["conv1.weight"]), (std::vector<int64_t>{16, 3, 3, 3}));
  EXPECT_EQ(shapeOf(params["fc.weight"]), (std::vector<int64_t>{7, 64}));
}

struct ForwardCase {
  std::string name;
  int64_t classes, channels, size, batch;
};

TEST(ModelsTest, ForwardGivesLogitsAndGradientsReachEveryParameter) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  torch::manual_seed(seed);
  for (const ForwardCase& c : {ForwardCase{"small_resnet", 10, 1, 28, 4},
                               ForwardCase{"mlp", 10, 1, 28, 3},
                               ForwardCase{"resnet20", 10, 3, 32, 2},
                               ForwardCase{"resnet18_cifar", 10, 3, 32, 2}}) {
    SCOPED_TRACE(c.name);
    auto net = build(c.name, c.classes, c.channels);
    net->train();
    torch::Tensor logits = net->forward(torch::randn({c.batch, c.channels, c.size, c.size}));
    EXPECT_EQ(shapeOf(logits), (std::vector<int64_t>{c.batch, c.classes}));
    EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
    torch::nn::functional::cross_entropy(logits, torch::randint(0, c.classes, {c.batch}))
        .backward();
    for (const auto& item : net->named_parameters()) {
      ASSERT_TRUE(item.value().grad().defined()) << item.key();
      EXPECT_GT(item.value().grad().abs().sum().item<float>(), 0.0f) << item.key();
    }
  }
}

TEST(ModelsTest, ResNet50ForwardsASmallImage) {
  auto net = build("resnet50", 1000, 3);
  net->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor logits = net->forward(torch::randn({1, 3, 64, 64}));
  EXPECT_EQ(shapeOf(logits), (std::vector<int64_t>{1, 1000}));
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
}

// ResNet-50 starts every residual branch at zero (its closing BN's gamma), so each block
// starts as its shortcut; the CIFAR ResNets keep gamma = 1 everywhere.
TEST(ModelsTest, ResNet50StartsEachResidualBranchAtZero) {
  int closing = 0;
  for (const auto& p : build("resnet50", 10, 3)->named_parameters()) {
    const std::string& name = p.key();
    if (name.find("bn") == std::string::npos || name.size() < 7 ||
        name.compare(name.size() - 7, 7, ".weight") != 0) {
      continue;
    }
    const bool last = name.find(".bn3.") != std::string::npos;
    closing += last;
    EXPECT_TRUE(torch::equal(p.value(), torch::full_like(p.value(), last ? 0.0 : 1.0))) << name;
  }
  EXPECT_EQ(closing, 3 + 4 + 6 + 3);  // one per bottleneck
  for (const auto& p : build("resnet18_cifar", 10, 3)->named_parameters()) {
    if (p.key().find(".bn2.weight") != std::string::npos) {
      EXPECT_TRUE(torch::equal(p.value(), torch::ones_like(p.value()))) << p.key();
    }
  }
}

TEST(ModelsTest, SameSeedGivesTheSameModel) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  torch::manual_seed(seed);
  auto a = build("resnet20", 10, 3);
  torch::manual_seed(seed);
  auto b = build("resnet20", 10, 3);
  auto pa = a->parameters();
  auto pb = b->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
}

TEST(ModelsTest, AFixedSizeModelRefusesOtherImagesNamingTheSize) {
  EXPECT_TRUE(checkImageSize("mlp", 28, 28).ok());
  const absl::Status s = checkImageSize("mlp", 32, 32);  // CIFAR-10's
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("28 x 28"), std::string::npos) << s;
  EXPECT_NE(s.message().find("32 x 32"), std::string::npos) << s;
  EXPECT_TRUE(checkImageSize("resnet20", 32, 32).ok());  // a global pool: any size
  EXPECT_TRUE(checkImageSize("resnet20", 224, 224).ok());
}

TEST(ModelsTest, UnknownNamesAndBadSizesAreInvalidArguments) {
  absl::StatusOr<std::shared_ptr<ImageClassifier>> bad = makeModel("vgg16", 10, 3);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  for (const ModelInfo& m : knownModels()) {
    EXPECT_NE(bad.status().message().find(m.name), std::string::npos) << bad.status();
  }
  EXPECT_EQ(makeModel("resnet20", 0, 3).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(makeModel("resnet20", 10, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

// The init of each layer kind against its formula: under kaiming-fan-out a conv weight is
// N(0, 2 / fan_out); under torch-default U(-b, b) with b = 1 / sqrt(fan_in), so its std is
// b / sqrt(3), and BN weights are 1; under torch-0.4 BN weights are U(0, 1). fan_in =
// in_channels x k x k, fan_out = out_channels x k x k. Statistics over one seed's weights
// (the smallest conv, the 3x3 stem of 1,728 weights, is held to 12%).
TEST(ModelsTest, InitOptionsGiveEachLayerItsDistribution) {
  torch::manual_seed(3);
  for (ModelInit init : {ModelInit::kKaimingFanOut, ModelInit::kTorchDefault,
                         ModelInit::kTorch04}) {
    SCOPED_TRACE(std::string(nameOf(kModelInitNames, init)));
    absl::StatusOr<std::shared_ptr<ImageClassifier>> model = makeModel("resnet18_cifar", 10, 3, init);
    ASSERT_TRUE(model.ok()) << model.status();
    int convs = 0, norms = 0;
    for (const auto& item : (*model)->named_modules("", /*include_self=*/false)) {
      if (auto* cv = item.value()->as<torch::nn::Conv2d>()) {
        const torch::Tensor w = cv->weight;
        const double fan_in = static_cast<double>(w.size(1) * w.size(2) * w.size(3));
        const double fan_out = static_cast<double>(w.size(0) * w.size(2) * w.size(3));
        const double want = init == ModelInit::kKaimingFanOut ? std::sqrt(2.0 / fan_out)
                                                              : 1.0 / std::sqrt(3.0 * fan_in);
        EXPECT_NEAR(w.std().item<double>(), want, 0.12 * want) << item.key();
        EXPECT_NEAR(w.mean().item<double>(), 0.0, 0.2 * want) << item.key();
        if (init != ModelInit::kKaimingFanOut) {
          EXPECT_LE(w.abs().max().item<double>(), 1.0001 / std::sqrt(fan_in)) << item.key();
        }
        ++convs;
      } else if (auto* bn = item.value()->as<torch::nn::BatchNorm2d>()) {
        const torch::Tensor g = bn->weight;
        if (init == ModelInit::kTorch04) {
          EXPECT_GE(g.min().item<double>(), 0.0) << item.key();
          EXPECT_LT(g.max().item<double>(), 1.0) << item.key();
          EXPECT_NEAR(g.mean().item<double>(), 0.5, 5.0 / std::sqrt(12.0 * g.numel()))
              << item.key();
        } else {
          EXPECT_TRUE(torch::equal(g, torch::ones_like(g))) << item.key();
        }
        EXPECT_TRUE(torch::equal(bn->bias, torch::zeros_like(bn->bias))) << item.key();
        ++norms;
      }
    }
    EXPECT_EQ(convs, 20);  // stem, 16 in the blocks, 3 projection shortcuts
    EXPECT_EQ(norms, 20);
  }
}

TEST(ModelsTest, InitsAModelCannotTakeAreRefusedByName) {
  for (ModelInit init : {ModelInit::kKaimingFanOut, ModelInit::kTorch04}) {
    absl::Status s = checkInit("mlp", init);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.message()).find(nameOf(kModelInitNames, init)), std::string::npos);
    EXPECT_EQ(makeModel("mlp", 10, 1, init).status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(checkInit("mlp", ModelInit::kTorchDefault).ok());
  EXPECT_TRUE(makeModel("mlp", 10, 1, ModelInit::kTorchDefault).ok());
}

}  // namespace
}  // namespace sparseps

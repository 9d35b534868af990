#include "core/torch/flat_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace sparseps {
namespace {

// Conv + BatchNorm + Linear: compressed and dense parameters, float and int64 buffers.
struct TinyNetImpl : torch::nn::Module {
  TinyNetImpl() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3)));
    bn = register_module("bn", torch::nn::BatchNorm2d(4));
    fc = register_module("fc", torch::nn::Linear(4 * 4 * 4, 5));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = torch::relu(bn(conv(x)));
    return fc(h.flatten(1));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Linear fc{nullptr};
};

uint64_t freshSeed() { return std::random_device{}(); }

// A second net with the same parameters and buffers as `src`.
std::shared_ptr<TinyNetImpl> copyOf(TinyNetImpl& src) {
  auto dst = std::make_shared<TinyNetImpl>();
  torch::NoGradGuard no_grad;
  auto sp = src.named_parameters();
  auto dp = dst->named_parameters();
  for (const auto& item : sp) dp[item.key()].copy_(item.value());
  auto sb = src.named_buffers();
  auto db = dst->named_buffers();
  for (const auto& item : sb) db[item.key()].copy_(item.value());
  return dst;
}

torch::Tensor lossOf(TinyNetImpl& net, const torch::Tensor& x, const torch::Tensor& y) {
  return torch::nn::functional::cross_entropy(net.forward(x), y);
}

std::vector<float> toVector(const torch::Tensor& t) {
  torch::Tensor c = t.detach().contiguous().view(-1);
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

void expectSpanNear(absl::Span<const float> got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::abs(want[i]))) << "element " << i;
  }
}

// The reference's parameters (or grads) concatenated in layout order.
std::vector<float> concatParams(TinyNetImpl& net, bool grads) {
  std::vector<float> out;
  for (const auto& p : net.parameters()) {
    std::vector<float> v = toVector(grads ? p.grad() : p);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

std::vector<float> concatFloatBuffers(TinyNetImpl& net) {
  std::vector<float> out;
  for (const auto& b : net.buffers()) {
    if (b.scalar_type() != torch::kFloat32) continue;
    std::vector<float> v = toVector(b);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

class FlatModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = freshSeed();
    torch::manual_seed(seed_);
    net_ = std::make_shared<TinyNetImpl>();
  }
  torch::Tensor input(int64_t batch = 6) { return torch::randn({batch, 3, 6, 6}); }
  torch::Tensor labels(int64_t batch = 6) { return torch::randint(0, 5, {batch}); }

  uint64_t seed_ = 0;
  std::shared_ptr<TinyNetImpl> net_;
};

TEST_F(FlatModelTest, LayoutFollowsNamedParametersAndBuffers) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  std::vector<float> before = concatParams(*net_, false);
  std::vector<float> buffers_before = concatFloatBuffers(*net_);
  absl::StatusOr<FlatModel> flat = FlatModel::create(net_);
  ASSERT_TRUE(flat.ok()) << flat.status();

  const ParamLayout& layout = flat->paramLayout();
  std::vector<std::string> names;
  for (const ParamSegment& s : layout.segments()) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv.weight", "conv.bias", "bn.weight",
                                             "bn.bias", "fc.weight", "fc.bias"}));
  EXPECT_EQ(layout[0].shape, (std::vector<int64_t>{4, 3, 3, 3}));
  EXPECT_TRUE(layout[0].compressed);
  EXPECT_FALSE(layout[1].compressed);
  EXPECT_FALSE(layout[2].compressed);
  EXPECT_TRUE(layout[4].compressed);
  EXPECT_EQ(layout.numel(), 108u + 4 + 4 + 4 + 320 + 5);
  EXPECT_EQ(flat->params().size(), layout.numel());
  EXPECT_EQ(flat->grads().size(), layout.numel());

  std::vector<std::string> buffer_names;
  for (const ParamSegment& s : flat->bufferLayout().segments()) buffer_names.push_back(s.name);
  EXPECT_EQ(buffer_names, (std::vector<std::string>{"bn.running_mean", "bn.running_var"}));
  EXPECT_EQ(flat->untrackedBuffers(), std::vector<std::string>{"bn.num_batches_tracked"});

  expectSpanNear(flat->params(), before, 0.0f);
  expectSpanNear(flat->buffers(), buffers_before, 0.0f);
  for (float g : flat->grads()) ASSERT_EQ(g, 0.0f);
}

// CompressedTensors::kAll compresses biases and BN weights too (the DGS reference's rule);
// the fingerprint tells the two layouts apart, so ranks that disagree are refused at connect.
TEST_F(FlatModelTest, CompressingEveryTensorMarksEverySegmentAndChangesTheFingerprint) {
  absl::StatusOr<FlatModel> multi_dim = FlatModel::create(net_);
  ASSERT_TRUE(multi_dim.ok()) << multi_dim.status();
  absl::StatusOr<FlatModel> all = FlatModel::create(net_, CompressedTensors::kAll);
  ASSERT_TRUE(all.ok()) << all.status();
  for (const ParamSegment& s : all->paramLayout().segments()) EXPECT_TRUE(s.compressed) << s.name;
  for (const ParamSegment& s : all->bufferLayout().segments()) EXPECT_FALSE(s.compressed) << s.name;
  EXPECT_NE(all->fingerprint(), multi_dim->fingerprint());
}

TEST_F(FlatModelTest, ModuleTensorsAreViewsOfTheFlatBuffers) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  absl::StatusOr<FlatModel> flat = FlatModel::create(net_);
  ASSERT_TRUE(flat.ok()) << flat.status();
  const ParamLayout& layout = flat->paramLayout();
  size_t fc_w = *layout.indexOf("fc.weight");
  flat->params()[layout[fc_w].offset + 7] = 42.5f;
  EXPECT_EQ(net_->fc->weight.view(-1)[7].item<float>(), 42.5f);
  EXPECT_EQ(net_->fc->weight.data_ptr<float>(), flat->params().data() + layout[fc_w].offset);

  const ParamLayout& buffers = flat->bufferLayout();
  size_t var = *buffers.indexOf("bn.running_var");
  flat->buffers()[buffers[var].offset + 2] = 3.0f;
  EXPECT_EQ(net_->bn->running_var[2].item<float>(), 3.0f);

  // A training-mode forward updates the running statistics inside the flat buffer.
  std::vector<float> stats_before(flat->buffers().begin(), flat->buffers().end());
  net_->train();
  net_->forward(input());
  std::vector<float> stats_after(flat->buffers().begin(), flat->buffers().end());
  EXPECT_NE(stats_before, stats_after);
  EXPECT_EQ(stats_after, concatFloatBuffers(*net_));
}

// The host copies a GPU worker loads and sends its model through (here on the CPU).
TEST_F(FlatModelTest, HostCopiesReadAndWriteTheFlatBuffers) {
  absl::StatusOr<FlatModel> flat = FlatModel::create(net_);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_FALSE(flat->onDevice());
  EXPECT_EQ(flat->deviceIndex(), -1);
  std::vector<float> params(flat->params().size()), buffers(flat->buffers().size());
  for (size_t i = 0; i < params.size(); ++i) params[i] = 0.5f * static_cast<float>(i);
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i] = 1.0f + static_cast<float>(i);
  ASSERT_TRUE(flat->writeParams(params).ok());
  ASSERT_TRUE(flat->writeBuffers(buffers).ok());
  EXPECT_EQ(net_->fc->bias[4].item<float>(), params.back());
  EXPECT_EQ(net_->bn->running_var[3].item<float>(), buffers.back());
  std::vector<float> params_back(params.size()), buffers_back(buffers.size());
  ASSERT_TRUE(flat->readParams(absl::MakeSpan(params_back)).ok());
  ASSERT_TRUE(flat->readBuffers(absl::MakeSpan(buffers_back)).ok());
  EXPECT_EQ(params_back, params);
  EXPECT_EQ(buffers_back, buffers);
  params.pop_back();
  absl::Status s = flat->writeParams(params);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(std::to_string(params.size())), absl::string_view::npos) << s;
}

// The gradient tests: the flat model over net_, and a copy of the net that has taken one
// backward of the batch (x_, y_), whose gradients are want_.
class FlatGradTest : public FlatModelTest {
 protected:
  void SetUp() override {
    FlatModelTest::SetUp();
    trace_.emplace(__FILE__, __LINE__, "seed " + std::to_string(seed_));
    ref_ = copyOf(*net_);
    absl::StatusOr<FlatModel> flat = FlatModel::create(net_);
    ASSERT_TRUE(flat.ok()) << flat.status();
    flat_.emplace(*std::move(flat));
    x_ = input();
    y_ = labels();
    lossOf(*ref_, x_, y_).backward();
    want_ = concatParams(*ref_, true);
  }

  std::optional<::testing::ScopedTrace> trace_;
  std::shared_ptr<TinyNetImpl> ref_;
  std::optional<FlatModel> flat_;
  torch::Tensor x_, y_;
  std::vector<float> want_;
};

TEST_F(FlatGradTest, BackwardAccumulatesIntoTheFlatGradientBuffer) {
  lossOf(*net_, x_, y_).backward();
  expectSpanNear(flat_->grads(), want_, 1e-6f);

  // A second backward adds to the same storage.
  lossOf(*net_, x_, y_).backward();
  std::vector<float> twice(want_);
  for (float& g : twice) g *= 2.0f;
  expectSpanNear(flat_->grads(), twice, 1e-6f);

  flat_->zeroGrad();
  for (float g : flat_->grads()) ASSERT_EQ(g, 0.0f);
  lossOf(*net_, x_, y_).backward();
  expectSpanNear(flat_->grads(), want_, 1e-6f);
}

TEST_F(FlatGradTest, ZeroGradReattachesGradientsThatWereResetToNone) {
  net_->zero_grad(/*set_to_none=*/true);
  ASSERT_FALSE(net_->fc->weight.grad().defined());
  flat_->zeroGrad();
  lossOf(*net_, x_, y_).backward();
  expectSpanNear(flat_->grads(), want_, 1e-6f);
}

TEST_F(FlatGradTest, GatherGradsCopiesInGradientsThatBackwardMadeAfterAReset) {
  lossOf(*net_, input(), y_).backward();  // other values in the flat buffer
  net_->zero_grad(/*set_to_none=*/true);  // the user's own reset, not zeroGrad()
  lossOf(*net_, x_, y_).backward();       // autograd makes fresh gradient tensors
  flat_->gatherGrads();
  expectSpanNear(flat_->grads(), want_, 1e-6f);

  // Re-attached: the next backward accumulates into the flat buffer again.
  flat_->zeroGrad();
  lossOf(*net_, x_, y_).backward();
  expectSpanNear(flat_->grads(), want_, 1e-6f);

  // A parameter without a gradient counts as zero.
  net_->zero_grad(/*set_to_none=*/true);
  flat_->gatherGrads();
  for (float g : flat_->grads()) ASSERT_EQ(g, 0.0f);
}

// Runs `steps` training steps on the flat model with a hand-written SGD on the flat
// vectors and on a copy with torch::optim::SGD, then compares parameters, BN statistics
// and eval-mode outputs.
void compareWithTorchSgd(std::shared_ptr<TinyNetImpl> net, double momentum, int steps) {
  auto ref = copyOf(*net);
  absl::StatusOr<FlatModel> flat = FlatModel::create(net);
  ASSERT_TRUE(flat.ok()) << flat.status();
  const float lr = 0.1f;
  const float mu = static_cast<float>(momentum);
  torch::optim::SGD opt(ref->parameters(), torch::optim::SGDOptions(lr).momentum(momentum));
  std::vector<float> velocity(flat->params().size(), 0.0f);
  const std::vector<float> initial(flat->params().begin(), flat->params().end());
  net->train();
  ref->train();
  for (int step = 0; step < steps; ++step) {
    torch::Tensor x = torch::randn({8, 3, 6, 6});
    torch::Tensor y = torch::randint(0, 5, {8});

    opt.zero_grad();
    lossOf(*ref, x, y).backward();
    opt.step();

    flat->zeroGrad();
    lossOf(*net, x, y).backward();
    absl::Span<float> w = flat->params();
    absl::Span<const float> g = flat->grads();
    for (size_t i = 0; i < w.size(); ++i) {
      velocity[i] = mu * velocity[i] + g[i];  // torch's first step sets v = g: same here
      w[i] -= lr * velocity[i];
    }
  }
  ASSERT_NE(std::vector<float>(flat->params().begin(), flat->params().end()), initial);
  expectSpanNear(flat->params(), concatParams(*ref, false), 1e-5f);
  expectSpanNear(flat->buffers(), concatFloatBuffers(*ref), 1e-5f);

  net->eval();
  ref->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({4, 3, 6, 6});
  expectSpanNear(absl::MakeConstSpan(toVector(net->forward(x))), toVector(ref->forward(x)),
                 1e-5f);
}

TEST_F(FlatModelTest, PlainSgdThroughFlatBuffersMatchesTorchOptim) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  compareWithTorchSgd(net_, 0.0, 5);
}

TEST_F(FlatModelTest, MomentumSgdThroughFlatBuffersMatchesTorchOptim) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  compareWithTorchSgd(net_, 0.9, 5);
}

TEST(FlatModelErrorsTest, RejectsNonFloatParametersAndNullModules) {
  auto net = std::make_shared<torch::nn::Module>();
  net->register_parameter("w", torch::zeros({2, 2}, torch::kFloat64));
  absl::StatusOr<FlatModel> flat = FlatModel::create(net);
  EXPECT_EQ(flat.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(flat.status().message().find("'w'"), std::string::npos) << flat.status();
  EXPECT_EQ(FlatModel::create(nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FlatModelErrorsTest, RejectsParametersOnTwoDevices) {
  auto net = std::make_shared<torch::nn::Module>();
  net->register_parameter("a", torch::zeros({2, 2}));
  net->register_parameter("b", torch::zeros({2, 2}, torch::TensorOptions().device(torch::kMeta)));
  absl::StatusOr<FlatModel> flat = FlatModel::create(net);
  EXPECT_EQ(flat.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(flat.status().message().find("'b'"), std::string::npos) << flat.status();
  EXPECT_NE(flat.status().message().find("one device"), std::string::npos) << flat.status();
}

TEST(FlatModelErrorsTest, RejectsATensorRegisteredTwice) {
  auto net = std::make_shared<torch::nn::Module>();
  torch::Tensor shared = torch::zeros({2, 2});
  net->register_parameter("a", shared);
  net->register_parameter("b", shared);
  EXPECT_EQ(FlatModel::create(net).status().code(), absl::StatusCode::kInvalidArgument);
}

// The fingerprint ranks compare in the handshake: equal for equal layouts, different when
// only the buffers differ or when the two layouts trade places.
TEST(FlatModelFingerprintTest, CoversTheBuffersAsWellAsTheParameters) {
  auto model = [](const std::vector<int64_t>& param, const std::vector<int64_t>& buffer) {
    FlatModel::NamedTensors params{{"w", torch::zeros(param)}};
    FlatModel::NamedTensors buffers;
    if (!buffer.empty()) buffers.emplace_back("w", torch::zeros(buffer));
    return FlatModel::create(params, buffers).value();
  };
  const FlatModel a = model({2, 3}, {4});
  EXPECT_EQ(a.fingerprint(), model({2, 3}, {4}).fingerprint());
  const FlatModel other_buffer = model({2, 3}, {5});
  EXPECT_EQ(other_buffer.paramLayout().fingerprint(), a.paramLayout().fingerprint());
  EXPECT_NE(other_buffer.fingerprint(), a.fingerprint());
  EXPECT_NE(model({2, 3}, {}).fingerprint(), a.fingerprint());
  // Roles swapped between two dense tensors: each layout alone is the same as the other
  // model's (a dense "w" of 4, a dense "w" of 5), the model is not.
  const FlatModel four_five = model({4}, {5});
  const FlatModel five_four = model({5}, {4});
  EXPECT_EQ(four_five.paramLayout().fingerprint(), five_four.bufferLayout().fingerprint());
  EXPECT_EQ(four_five.bufferLayout().fingerprint(), five_four.paramLayout().fingerprint());
  EXPECT_NE(four_five.fingerprint(), five_four.fingerprint());
  EXPECT_NE(model({2, 3}, {}).fingerprint(), model({3, 2}, {}).fingerprint());
}

}  // namespace
}  // namespace sparseps

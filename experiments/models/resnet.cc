#include "experiments/models/resnet.h"

#include <torch/torch.h>

#include <string>
#include <utility>

namespace sparseps {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                        .stride(stride)
                        .padding(kernel / 2)
                        .bias(false));
}

// One residual unit: out = relu(body(x) + shortcut(x)).
class ResidualBlock : public nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  virtual int64_t outChannels() const = 0;
  // The BN that closes the residual branch (before the sum with the shortcut).
  virtual nn::BatchNorm2d& lastNorm() = 0;
};

// The shortcut of a block whose input and output shapes differ.
//  kProjection: downsample = 1x1 conv (stride s) + BN (option B; torchvision's naming).
//  kZeroPad: option A: x[:, :, ::s, ::s], then zero channels padded on both sides.
class Shortcut {
 public:
  Shortcut(nn::Module& owner, ResNetConfig::Shortcut kind, int64_t in, int64_t out,
           int64_t stride)
      : in_(in), out_(out), stride_(stride) {
    if (in == out && stride == 1) return;
    if (kind == ResNetConfig::Shortcut::kProjection) {
      downsample_ = owner.register_module(
          "downsample", nn::Sequential(conv(in, out, 1, stride), nn::BatchNorm2d(out)));
    } else {
      zero_pad_ = true;
    }
  }

  torch::Tensor operator()(const torch::Tensor& x) {
    if (downsample_) return downsample_->forward(x);
    if (!zero_pad_) return x;
    torch::Tensor sub = x.slice(2, 0, x.size(2), stride_).slice(3, 0, x.size(3), stride_);
    int64_t pad = out_ - in_;
    return torch::constant_pad_nd(sub, {0, 0, 0, 0, pad / 2, pad - pad / 2});
  }

 private:
  int64_t in_, out_, stride_;
  bool zero_pad_ = false;
  nn::Sequential downsample_{nullptr};
};

class BasicBlock : public ResidualBlock {
 public:
  BasicBlock(int64_t in, int64_t width, int64_t stride, ResNetConfig::Shortcut kind)
      : conv1_(register_module("conv1", conv(in, width, 3, stride))),
        bn1_(register_module("bn1", nn::BatchNorm2d(width))),
        conv2_(register_module("conv2", conv(width, width, 3, 1))),
        bn2_(register_module("bn2", nn::BatchNorm2d(width))),
        shortcut_(*this, kind, in, width, stride),
        out_(width) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor h = torch::relu(bn1_(conv1_(x)));
    h = bn2_(conv2_(h));
    return torch::relu(h + shortcut_(x));
  }
  int64_t outChannels() const override { return out_; }
  nn::BatchNorm2d& lastNorm() override { return bn2_; }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  Shortcut shortcut_;
  int64_t out_;
};

// torchvision's Bottleneck (ResNet v1.5): the stride sits in the 3x3 conv.
class Bottleneck : public ResidualBlock {
 public:
  static constexpr int64_t kExpansion = 4;

  Bottleneck(int64_t in, int64_t width, int64_t stride, ResNetConfig::Shortcut kind)
      : conv1_(register_module("conv1", conv(in, width, 1, 1))),
        bn1_(register_module("bn1", nn::BatchNorm2d(width))),
        conv2_(register_module("conv2", conv(width, width, 3, stride))),
        bn2_(register_module("bn2", nn::BatchNorm2d(width))),
        conv3_(register_module("conv3", conv(width, width * kExpansion, 1, 1))),
        bn3_(register_module("bn3", nn::BatchNorm2d(width * kExpansion))),
        shortcut_(*this, kind, in, width * kExpansion, stride),
        out_(width * kExpansion) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor h = torch::relu(bn1_(conv1_(x)));
    h = torch::relu(bn2_(conv2_(h)));
    h = bn3_(conv3_(h));
    return torch::relu(h + shortcut_(x));
  }
  int64_t outChannels() const override { return out_; }
  nn::BatchNorm2d& lastNorm() override { return bn3_; }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  nn::Conv2d conv3_;
  nn::BatchNorm2d bn3_;
  Shortcut shortcut_;
  int64_t out_;
};

class ResNet : public ImageClassifier {
 public:
  explicit ResNet(const ResNetConfig& c)
      : max_pool_(c.stem == ResNetConfig::Stem::kImageNet),
        conv1_(register_module(
            "conv1", max_pool_ ? conv(c.in_channels, c.stem_channels, 7, 2)
                               : conv(c.in_channels, c.stem_channels, 3, 1))),
        bn1_(register_module("bn1", nn::BatchNorm2d(c.stem_channels))) {
    int64_t channels = c.stem_channels;
    for (size_t stage = 0; stage < c.widths.size(); ++stage) {
      nn::ModuleList layer;
      for (int64_t b = 0; b < c.blocks[stage]; ++b) {
        int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        std::shared_ptr<ResidualBlock> block;
        if (c.block == ResNetConfig::Block::kBasic) {
          block = std::make_shared<BasicBlock>(channels, c.widths[stage], stride, c.shortcut);
        } else {
          block = std::make_shared<Bottleneck>(channels, c.widths[stage], stride, c.shortcut);
        }
        channels = block->outChannels();
        layer->push_back(block);
        blocks_.push_back(std::move(block));
      }
      register_module("layer" + std::to_string(stage + 1), layer);
    }
    fc_ = register_module("fc", nn::Linear(channels, c.num_classes));
    // Under kTorchDefault every layer keeps what its constructor gave it.
    for (auto& m : modules(/*include_self=*/false)) {
      auto* cv = m->as<nn::Conv2d>();
      auto* bn = m->as<nn::BatchNorm2d>();
      if (c.init == ResNetConfig::Init::kKaimingFanOut && cv != nullptr) {
        nn::init::kaiming_normal_(cv->weight, 0.0, torch::kFanOut, torch::kReLU);
      } else if (c.init == ResNetConfig::Init::kTorch04 && bn != nullptr) {
        nn::init::uniform_(bn->weight, 0.0, 1.0);
      }
    }
    if (c.zero_init_residual) {
      torch::NoGradGuard no_grad;
      for (auto& block : blocks_) nn::init::zeros_(block->lastNorm()->weight);
    }
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = torch::relu(bn1_(conv1_(images)));
    if (max_pool_) x = torch::max_pool2d(x, 3, 2, 1);
    for (auto& block : blocks_) x = block->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_(x);
  }

 private:
  bool max_pool_;
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  nn::Linear fc_{nullptr};
};

}  // namespace

ResNetConfig resnet50Config(int64_t num_classes, int64_t in_channels) {
  ResNetConfig c;
  c.in_channels = in_channels;
  c.num_classes = num_classes;
  c.stem = ResNetConfig::Stem::kImageNet;
  c.stem_channels = 64;
  c.block = ResNetConfig::Block::kBottleneck;
  c.shortcut = ResNetConfig::Shortcut::kProjection;
  c.widths = {64, 128, 256, 512};
  c.blocks = {3, 4, 6, 3};
  c.zero_init_residual = true;
  return c;
}

ResNetConfig resnet18Config(int64_t num_classes, int64_t in_channels) {
  ResNetConfig c = resnet18CifarConfig(num_classes, in_channels);
  c.stem = ResNetConfig::Stem::kImageNet;
  return c;
}

ResNetConfig resnet18CifarConfig(int64_t num_classes, int64_t in_channels) {
  ResNetConfig c;
  c.in_channels = in_channels;
  c.num_classes = num_classes;
  c.stem = ResNetConfig::Stem::kCifar;
  c.stem_channels = 64;
  c.block = ResNetConfig::Block::kBasic;
  c.shortcut = ResNetConfig::Shortcut::kProjection;
  c.widths = {64, 128, 256, 512};
  c.blocks = {2, 2, 2, 2};
  return c;
}

ResNetConfig resnet20Config(int64_t num_classes, int64_t in_channels) {
  ResNetConfig c;
  c.in_channels = in_channels;
  c.num_classes = num_classes;
  c.stem = ResNetConfig::Stem::kCifar;
  c.stem_channels = 16;
  c.block = ResNetConfig::Block::kBasic;
  c.shortcut = ResNetConfig::Shortcut::kZeroPad;
  c.widths = {16, 32, 64};
  c.blocks = {3, 3, 3};
  return c;
}

ResNetConfig smallResNetConfig(int64_t num_classes, int64_t in_channels) {
  ResNetConfig c;
  c.in_channels = in_channels;
  c.num_classes = num_classes;
  c.stem = ResNetConfig::Stem::kCifar;
  c.stem_channels = 16;
  c.block = ResNetConfig::Block::kBasic;
  c.shortcut = ResNetConfig::Shortcut::kProjection;
  c.widths = {16, 32, 64};
  c.blocks = {1, 1, 1};
  return c;
}

std::shared_ptr<ImageClassifier> makeResNet(const ResNetConfig& config) {
  return std::make_shared<ResNet>(config);
}

}  // namespace sparseps

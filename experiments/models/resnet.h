#pragma once
// ResNet (He et al., "Deep Residual Learning for Image Recognition", CVPR 2016) in the
// variants the experiments train, built from one configuration:
//  - resnet50Config: torchvision's ResNet-50 (v1.5: stride in the 3x3 conv of a
//    bottleneck), 7x7/2 stem + 3x3/2 max-pool, bottlenecks [3, 4, 6, 3], 1x1-conv + BN
//    projection shortcuts. 25,557,032 parameters with 1000 classes. For 224 px images.
//  - resnet18Config: torchvision's ResNet-18, the 7x7/2 stem + max-pool with basic blocks
//    [2, 2, 2, 2] of 64..512 channels, projection shortcuts. 11,689,512 parameters with
//    1000 classes (the DGS paper's ImageNet model).
//  - resnet18CifarConfig: the CIFAR ResNet-18 of kuangliu/pytorch-cifar (the DGS
//    reference's model): 3x3/1 stem, no max-pool, basic blocks [2, 2, 2, 2] of
//    64..512 channels, projection shortcuts. 11,173,962 parameters with 10 classes.
//  - resnet20Config: the CIFAR ResNet-20 of the paper (section 4.2): 3x3 stem, three
//    stages of 3 basic blocks with 16/32/64 channels, option A shortcuts (stride-2
//    subsampling and zero-padded channels, no parameters). 269,722 parameters with 10
//    classes.
//  - smallResNetConfig: a fast ResNet for 28 px grayscale (Fashion-MNIST): 3x3 stem,
//    three stages of one basic block with 16/32/64 channels, projection shortcuts.
//    77,754 parameters with 10 classes.
// Parameter names follow torchvision (conv1, bn1, layer1.0.conv1, layer1.0.downsample.0,
// fc). Initialization follows torchvision: Kaiming-normal (fan_out) convolutions, BN
// weight 1 and bias 0, LibTorch's default for the final Linear; or LibTorch's defaults
// throughout (Init::kTorchDefault, Init::kTorch04). Every variant ends in a
// global average pool, so any input size large enough for the strides works.

#include <cstdint>
#include <memory>
#include <vector>

#include "experiments/models/image_classifier.h"

namespace sparseps {

struct ResNetConfig {
  enum class Stem { kImageNet, kCifar };       // 7x7/2 conv + 3x3/2 max-pool, or 3x3/1 conv
  enum class Block { kBasic, kBottleneck };    // two 3x3 convs, or 1x1-3x3-1x1 (x4 out)
  enum class Shortcut { kProjection, kZeroPad };  // 1x1 conv + BN, or option A
  // Convolutions Kaiming-normal (fan_out, ReLU gain), every layer's LibTorch default, or
  // that with BN weights U(0, 1) (PyTorch 0.4's default).
  enum class Init { kKaimingFanOut, kTorchDefault, kTorch04 };

  int64_t in_channels = 3;
  int64_t num_classes = 10;
  Stem stem = Stem::kCifar;
  int64_t stem_channels = 16;
  Block block = Block::kBasic;
  Shortcut shortcut = Shortcut::kProjection;
  Init init = Init::kKaimingFanOut;
  std::vector<int64_t> widths;   // per stage; a bottleneck outputs 4x its width
  std::vector<int64_t> blocks;   // blocks per stage; stage i > 0 starts with stride 2
  // The BN closing each residual branch starts with gamma = 0, so every block starts as its
  // shortcut (Goyal et al. 2017, arXiv:1706.02677, section 5.1; torchvision's
  // zero_init_residual). Without it ResNet-50's losses climbed within a few steps even at
  // a learning rate of 0.00625 per batch of 16, on one worker.
  bool zero_init_residual = false;
};

ResNetConfig resnet50Config(int64_t num_classes, int64_t in_channels);
ResNetConfig resnet18Config(int64_t num_classes, int64_t in_channels);
ResNetConfig resnet18CifarConfig(int64_t num_classes, int64_t in_channels);
ResNetConfig resnet20Config(int64_t num_classes, int64_t in_channels);
ResNetConfig smallResNetConfig(int64_t num_classes, int64_t in_channels);

// Builds the network. The config must be valid (positive sizes, as many widths as
// stages); the factory (model_factory.h) checks what users can get wrong.
std::shared_ptr<ImageClassifier> makeResNet(const ResNetConfig& config);

}  // namespace sparseps

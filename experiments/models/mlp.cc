#include "experiments/models/mlp.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/modules/linear.h>

#include <string>

#include "c10/util/Exception.h"

namespace sparseps {
namespace {

class Mlp : public ImageClassifier {
 public:
  Mlp(int64_t num_classes, int64_t in_channels)
      : in_features_(in_channels * kMlpImageSize * kMlpImageSize),
        fc1_(register_module("fc1", torch::nn::Linear(in_features_, kMlpHidden))),
        fc2_(register_module("fc2", torch::nn::Linear(kMlpHidden, kMlpHidden))),
        fc3_(register_module("fc3", torch::nn::Linear(kMlpHidden, num_classes))) {}

  torch::Tensor forward(const torch::Tensor& images) override {
    TORCH_CHECK(images.dim() == 4 && images.size(1) * images.size(2) * images.size(3) ==
                                         in_features_,
                "mlp: expects [N, C, ", kMlpImageSize, ", ", kMlpImageSize,
                "] images of ", in_features_, " values each, got ", images.sizes());
    torch::Tensor x = images.flatten(1);
    x = torch::relu(fc1_->forward(x));
    x = torch::relu(fc2_->forward(x));
    return fc3_->forward(x);
  }

 private:
  int64_t in_features_;
  torch::nn::Linear fc1_, fc2_, fc3_;
};

}  // namespace

std::shared_ptr<ImageClassifier> makeMlp(int64_t num_classes, int64_t in_channels) {
  return std::make_shared<Mlp>(num_classes, in_channels);
}

}  // namespace sparseps

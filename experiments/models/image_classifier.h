#pragma once
// ImageClassifier: what the experiment driver trains. A torch module whose forward maps a
// float batch of images [N, C, H, W] to logits [N, num_classes]; the factory
// (model_factory.h) returns every model behind this one type so the driver never needs to
// know which architecture it runs.

#include <torch/nn/module.h>

namespace sparseps {

class ImageClassifier : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& images) = 0;
};

}  // namespace sparseps

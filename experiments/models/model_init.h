#pragma once
// The spelling of --init, apart from the models so that flag parsing needs no LibTorch.

#include "optim/option_names.h"

namespace sparseps {

// How a model's weights start (--init):
//  - model: the model's own (the ResNets: kaiming-fan-out; the MLP: torch-default);
//  - torch-default: what a network written with torch.nn and no init code gets, every
//    layer's reset_parameters (convolution and linear weights kaiming_uniform_ with
//    a = sqrt(5), that is U(+-1/sqrt(fan_in)); BN weight 1 and bias 0). A CIFAR ResNet-18's
//    3x3 convolutions start about 2.4x smaller than under kaiming-fan-out;
//  - torch-0.4: the same under PyTorch 0.4, whose BN weights started U(0, 1) (ones from
//    PyTorch 1.2): what the DGS reference's runs got (they used the 'tcp' backend, which
//    PyTorch 1.0 removed);
//  - kaiming-fan-out: torchvision's ResNet init, convolutions Kaiming-normal with fan_out
//    (resnet50's zero-initialized last BN of each block included); only for models with
//    convolutions.
enum class ModelInit { kModel, kTorchDefault, kTorch04, kKaimingFanOut };
inline constexpr NameTable<ModelInit, 4> kModelInitNames{
    {{"model", ModelInit::kModel},
     {"torch-default", ModelInit::kTorchDefault},
     {"torch-0.4", ModelInit::kTorch04},
     {"kaiming-fan-out", ModelInit::kKaimingFanOut}}};

}  // namespace sparseps

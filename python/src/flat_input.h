#pragma once
// The arguments of the functions that hand a tensor to the C++ core: the tensor read in
// place as flat floats, and a density.

#include <torch/python.h>

#include "absl/types/span.h"

namespace sparseps::python {

// t's elements, if t is a contiguous float32 tensor on the CPU (or, with cuda_too, on a
// CUDA device) of fewer than 2^32 elements; else a ValueError naming fn and what to do.
absl::Span<const float> flatInput(const torch::Tensor& t, const char* fn, bool cuda_too = false);

// A ValueError naming fn unless density is in (0, 1].
void checkDensity(double density, const char* fn);

}  // namespace sparseps::python

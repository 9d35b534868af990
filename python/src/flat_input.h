#pragma once
// A tensor read in place as flat floats, for the functions that hand one to the C++ core.

#include <torch/python.h>

#include "absl/types/span.h"

namespace sparseps::python {

// t's elements, if t is a contiguous float32 tensor on the CPU (or, with cuda_too, on a
// CUDA device) of fewer than 2^32 elements; else a ValueError naming fn and what to do.
absl::Span<const float> flatInput(const torch::Tensor& t, const char* fn, bool cuda_too = false);

}  // namespace sparseps::python

#pragma once
// The selection kernels as functions on tensors, for users who want only the kernels:
// the input is read in place (a float32 CPU tensor, any shape, taken as flat), and the
// result is (indices: int64, values: float32[, extra]) over the flattened tensor.

#include <pybind11/pybind11.h>

namespace sparseps::python {

void bindCompress(pybind11::module_& m);

}  // namespace sparseps::python

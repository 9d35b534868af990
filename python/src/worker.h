#pragma once
// sparseps._C.Worker: the C++ PsWorker (core/torch/ps_rank.h) with the GIL released while it
// waits on other ranks and its errors raised as Python exceptions. sparseps.Optimizer
// (optimizer.py) is the torch face of it.

#include <pybind11/pybind11.h>

namespace sparseps::python {

void bindWorker(pybind11::module_& m);

}  // namespace sparseps::python

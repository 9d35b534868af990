#pragma once
// sparseps._C.WorkerRule: one method's worker rule on tensors, without a server or a
// network: what a worker pushes for a gradient, step by step, and a dense reply applied.
// It lets another implementation of a method be compared with sparseps's on the same
// gradients (experiments/crosscheck-reference runs the DGS reference's rules beside it).

#include <pybind11/pybind11.h>

namespace sparseps::python {

void bindRule(pybind11::module_& m);

}  // namespace sparseps::python

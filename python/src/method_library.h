#pragma once
// sparseps.load_methods(path): a shared library of methods (optim/method_library.h) added to
// the process's registry, so that --method names them in this process's jobs.

#include <pybind11/pybind11.h>

namespace sparseps::python {

void bindMethodLibrary(pybind11::module_& m);

}  // namespace sparseps::python

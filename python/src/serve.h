#pragma once
// serve: a server rank of a Python job. Flattens the module (its parameters are the model
// the workers start from), connects and serves its shard until every worker has finished
// or been dropped, with the GIL released. Returns the shard's traffic and how many
// workers it lost.

#include <pybind11/pybind11.h>

namespace sparseps::python {

void bindServe(pybind11::module_& m);

}  // namespace sparseps::python

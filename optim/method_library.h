#pragma once
// A shared library of methods: a method written outside sparseps, compiled on its own
// against sparseps's headers and libraries, and added to a running program's registry
// (the Python package's sparseps.load_methods). The library defines one entry point,
//
//   extern "C" int sparseps_add_methods(sparseps::MethodRegistry* registry) {
//     return registry->add(std::make_unique<MyMethod>()).ok() ? 0 : 1;
//   }
//
// which adds its methods and returns 0, or non-zero when one could not be added (a name
// already taken). Every rank of a job loads the same library: servers make the method's
// server rule, workers its worker rule.

#include "optim/method_registry.h"

namespace sparseps {

inline constexpr char kAddMethodsSymbol[] = "sparseps_add_methods";
using AddMethodsFunction = int (*)(MethodRegistry* registry);

}  // namespace sparseps

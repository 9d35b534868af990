#pragma once
// The built-in methods of docs/methods.md (msgd, asgd, gd, dgc, dgs), and the process's
// method registry that --method, the option table's readers and the Python package read.

#include "absl/status/status.h"
#include "optim/method_registry.h"

namespace sparseps {

// Adds every built-in method; fails only if one of their names is already in `registry`.
absl::Status registerBuiltinMethods(MethodRegistry& registry);

// The process's registry: the built-in methods, and any a program adds (one add() line)
// before it builds a job. Adding is not thread-safe; reading is.
MethodRegistry& methodRegistry();

}  // namespace sparseps

#pragma once
// The built-in methods of docs/methods.md: msgd, asgd, gd, dgc, dgs.

#include "absl/status/status.h"
#include "optim/method_registry.h"

namespace sparseps {

// Adds every built-in method; fails only if one of their names is already in `registry`.
absl::Status registerBuiltinMethods(MethodRegistry& registry);

}  // namespace sparseps

#pragma once
// MethodRegistry: maps --method=NAME to a Method. Explicit, no static self-registration
// (which static linking silently drops): the runtime creates a registry and calls
// registerBuiltinMethods (builtin_methods.h) at start-up; a user's method is one more add().
// add() rejects a name already stored (the check uses the stored key, method->name()) and
// an option the method says it reads that is not a row of the option table; find() lists
// the known names when the name is unknown.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "optim/method.h"

namespace sparseps {

class MethodRegistry {
 public:
  absl::Status add(std::unique_ptr<Method> method);
  // The method stays owned by the registry.
  absl::StatusOr<const Method*> find(absl::string_view name) const;
  std::vector<std::string> names() const;  // sorted

 private:
  std::map<std::string, std::unique_ptr<Method>, std::less<>> methods_;
};

}  // namespace sparseps

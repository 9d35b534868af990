// The built-in methods, listed once in optim/CMakeLists.txt (SPARSEPS_BUILTIN_METHODS),
// which compiles each name's optim/<name>.cc and writes builtin_method_list.inc: one
// SPARSEPS_METHOD(name) per name. Each file defines builtin_methods::<name>().

#include "optim/builtin_methods.h"

#include <memory>

#include "optim/fatal.h"

namespace sparseps {

namespace builtin_methods {
#define SPARSEPS_METHOD(name) std::unique_ptr<Method> name();
#include "optim/builtin_method_list.inc"
#undef SPARSEPS_METHOD
}  // namespace builtin_methods

namespace {

using MethodFactory = std::unique_ptr<Method> (*)();
constexpr MethodFactory kBuiltins[] = {
#define SPARSEPS_METHOD(name) builtin_methods::name,
#include "optim/builtin_method_list.inc"
#undef SPARSEPS_METHOD
};

}  // namespace

absl::Status registerBuiltinMethods(MethodRegistry& registry) {
  for (MethodFactory make : kBuiltins) {
    if (absl::Status s = registry.add(make()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

MethodRegistry& methodRegistry() {
  static MethodRegistry* registry = [] {
    auto* r = new MethodRegistry;
    if (absl::Status s = registerBuiltinMethods(*r); !s.ok()) fatal(s.message());
    return r;
  }();
  return *registry;
}

}  // namespace sparseps

// Adding a method: write optim/<name>.cc with its worker rule and a factory
// `std::unique_ptr<Method> make<Name>Method()` (return a DescentMethod<Worker> of
// descent_method.h), add the file to optim/CMakeLists.txt, and add its one line to
// kBuiltins below.

#include "optim/builtin_methods.h"

#include <memory>

namespace sparseps {

std::unique_ptr<Method> makeMsgdMethod();
std::unique_ptr<Method> makeAsgdMethod();
std::unique_ptr<Method> makeGdMethod();
std::unique_ptr<Method> makeDgcMethod();
std::unique_ptr<Method> makeDgsMethod();

namespace {

using MethodFactory = std::unique_ptr<Method> (*)();
constexpr MethodFactory kBuiltins[] = {
    makeMsgdMethod, makeAsgdMethod, makeGdMethod, makeDgcMethod, makeDgsMethod,
};

}  // namespace

absl::Status registerBuiltinMethods(MethodRegistry& registry) {
  for (MethodFactory make : kBuiltins) {
    if (absl::Status s = registry.add(make()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace sparseps

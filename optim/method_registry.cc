#include "optim/method_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sparseps {

absl::Status MethodRegistry::add(std::unique_ptr<Method> method) {
  if (method == nullptr) return absl::InvalidArgumentError("MethodRegistry::add: null method");
  std::string key = method->name();
  if (key.empty()) return absl::InvalidArgumentError("MethodRegistry::add: empty method name");
  auto [it, inserted] = methods_.try_emplace(key, nullptr);
  if (!inserted) {
    return absl::AlreadyExistsError(absl::StrCat("method '", key, "' is already registered"));
  }
  it->second = std::move(method);
  return absl::OkStatus();
}

absl::StatusOr<const Method*> MethodRegistry::find(absl::string_view name) const {
  auto it = methods_.find(name);
  if (it == methods_.end()) {
    return absl::NotFoundError(
        absl::StrCat("unknown method '", name, "'; known methods: ", absl::StrJoin(names(), ", ")));
  }
  return it->second.get();
}

std::vector<std::string> MethodRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(methods_.size());
  for (const auto& entry : methods_) out.push_back(entry.first);
  return out;
}

}  // namespace sparseps

#include "optim/method_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "optim/method_option_table.h"

namespace sparseps {

absl::Status MethodRegistry::add(std::unique_ptr<Method> method) {
  if (method == nullptr) return absl::InvalidArgumentError("MethodRegistry::add: null method");
  std::string key = method->name();
  if (key.empty()) return absl::InvalidArgumentError("MethodRegistry::add: empty method name");
  for (const std::string& option : method->ownOptions()) {
    const MethodOptionRow* row = findMethodOption(option);
    if (row == nullptr || row->every_method) {
      return absl::InvalidArgumentError(absl::StrCat(
          "method '", key, "' lists '", option, "' among the options it reads, which is ",
          row == nullptr ? "no method option" : "one every method reads",
          " (optim/method_option_table.h)"));
    }
  }
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

#pragma once
// The spellings of the enumerated options (the server's consistency mode, the downlink,
// the selection) that flags, config.json and the Python front use: one table per option,
// read by the parser, the flag's check and the printer alike, so no list of names is
// written twice.

#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace sparseps {

template <typename E, size_t N>
using NameTable = std::array<std::pair<absl::string_view, E>, N>;

template <typename E, size_t N>
std::vector<std::string> namesOf(const NameTable<E, N>& table) {
  std::vector<std::string> names;
  for (const auto& [name, value] : table) names.emplace_back(name);
  return names;
}

// The value spelled `name`; InvalidArgument naming the option and the spellings otherwise.
template <typename E, size_t N>
absl::StatusOr<E> parseName(const NameTable<E, N>& table, absl::string_view option,
                            absl::string_view name) {
  for (const auto& [known, value] : table) {
    if (known == name) return value;
  }
  return absl::InvalidArgumentError(absl::StrCat(option, ": '", name, "'; use ",
                                                 absl::StrJoin(namesOf(table), ", ")));
}

template <typename E, size_t N>
std::string nameOf(const NameTable<E, N>& table, E value) {
  for (const auto& [name, known] : table) {
    if (known == value) return std::string(name);
  }
  return "unnamed";  // a value added to the enum and not to its table
}

}  // namespace sparseps

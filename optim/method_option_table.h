#pragma once
// The method options a user sets, one row each: the name (config.json's key, the Python
// keyword; the flag is --name with dashes), the help, whether every method reads it, and
// where it lives in MethodOptions. The driver's flags, config.json and the Python front
// are all made from these rows, so a new option is a field and a row. Which methods read
// an option that not every method reads, each method says itself (Method::ownOptions), so
// a method added to the process's registry (methodRegistry()) is covered too.
//
// The job fills the rest of MethodOptions itself (lr0 from the rate, num_workers, the seed).

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "optim/method_options.h"

namespace sparseps {

// A field of MethodOptions of type T, reached from the whole struct.
template <typename T>
struct FieldRef {
  std::function<T&(MethodOptions&)> of;
  // The field, read only (`of` only finds it; it changes nothing).
  const T& get(const MethodOptions& o) const { return of(const_cast<MethodOptions&>(o)); }
};

// An enumerated field, read and written by its spellings.
struct ChoiceRef {
  std::vector<std::string> names;
  std::function<std::string(const MethodOptions&)> get;
  // Refuses a bad spelling: ": 'x'; use a, b" (the caller puts the option's name first).
  std::function<absl::Status(MethodOptions&, absl::string_view)> set;
};

using OptionRef = std::variant<FieldRef<bool>, FieldRef<int>, FieldRef<double>,
                                 FieldRef<std::string>, FieldRef<std::vector<double>>, ChoiceRef>;

struct MethodOptionRow {
  std::string name;                  // "server_density"
  std::string field;                 // as validate() names it: "MethodOptions.server_density"
  std::string help;
  bool every_method;  // every method reads it; else the methods that list it read it
  OptionRef ref;

  std::string flag() const;  // "--server-density"
  // Whether the method of that name in methodRegistry() reads it (false for an unknown one).
  bool readBy(absl::string_view method) const;
  // The registry's methods that read it, sorted; empty when every method does.
  std::vector<std::string> readers() const;
};

// std::visit over an OptionRef with one lambda per kind.
template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

// Every row, in the order the help lists them.
const std::vector<MethodOptionRow>& methodOptionRows();

// The row named `name`, or null.
const MethodOptionRow* findMethodOption(absl::string_view name);

}  // namespace sparseps

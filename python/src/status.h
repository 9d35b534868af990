#pragma once
// Turns a failed absl::Status into the Python exception a user expects: a bad argument is
// a ValueError, a peer that died, hung or sent garbage is a sparseps.PeerError (a
// RuntimeError), anything else a RuntimeError. The message is the core's, unchanged.

#include <pybind11/pybind11.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sparseps::python {

// Registers sparseps.PeerError in `m`; call once, first.
void registerErrors(pybind11::module_& m);

[[noreturn]] void raise(const absl::Status& status);

inline void check(const absl::Status& status) {
  if (!status.ok()) raise(status);
}

template <typename T>
T value(absl::StatusOr<T> result) {
  if (!result.ok()) raise(result.status());
  return std::move(*result);
}

}  // namespace sparseps::python

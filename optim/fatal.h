#pragma once
// fatal(): the end of a broken invariant inside optim/ (a rule given a segment that does
// not fit its specs, a factory given options its method rejected). Expected failures
// (bad options, bad checkpoint bytes, bad messages) are absl::Status results instead:
// callers check them first with Method::validate, the wire decoder and loadState.

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sparseps {

template <typename... Args>
[[noreturn]] void fatal(const Args&... args) {
  std::fprintf(stderr, "sparseps fatal: %s\n", absl::StrCat(args...).c_str());
  std::abort();
}

inline void requireOk(const absl::Status& status) {
  if (!status.ok()) fatal(status.message());
}

}  // namespace sparseps

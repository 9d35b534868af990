#pragma once
// CompressorRegistry: the compressors a run can name (--compressor=NAME[:key=value,...]),
// each with its rule, its paper and its options, so that --help lists them all. A
// built-in compressor file defines builtin_compressors::<file>(), its CompressorInfos (an
// options struct parses and validates the options), and is named once in
// SPARSEPS_BUILTIN_COMPRESSORS (compressors/CMakeLists.txt). add() rejects a duplicate
// name and a code format that clashes with another; make() names the known compressors,
// or the bad option, in its error.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compressors/compressor_info.h"

namespace sparseps {

class CompressorRegistry {
 public:
  absl::Status add(CompressorInfo info);
  // From "NAME" or "NAME:key=value,...".
  absl::StatusOr<std::unique_ptr<Compressor>> make(absl::string_view spec) const;
  std::vector<std::string> names() const;
  // The entry of that name; null if none.
  const CompressorInfo* info(absl::string_view name) const;
  // Every compressor: name, options with defaults, rule and paper (for --help).
  std::string help() const;

 private:
  std::map<std::string, CompressorInfo> infos_;
};

// Adds every built-in compressor.
void registerBuiltinCompressors(CompressorRegistry* registry);

// The process's registry, which --compressor, gd's compressor option and the help read:
// the built-in compressors, and any a program adds (one add() line) first, before it
// builds a job or reads the option table (methodOptionRows, whose help lists the names).
// Adding is not thread-safe; reading is.
CompressorRegistry& compressorRegistry();

// A compressor of compressorRegistry() from its spec.
absl::StatusOr<std::unique_ptr<Compressor>> makeRegisteredCompressor(absl::string_view spec);

}  // namespace sparseps

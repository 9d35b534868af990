#pragma once
// A compressor named with its options, as a user writes it: "NAME" or
// "NAME:key=value,key=value" (e.g. "qsgd:levels=4,bucket=512"). OptionReader hands the
// values to a compressor's options struct, naming the compressor and the key in every
// error, and refuses keys the compressor does not have.

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparseps {

struct CompressorSpec {
  std::string name;
  std::map<std::string, std::string> options;
};

// Parses "NAME[:key=value[,key=value...]]"; an empty name or key, a key without '=' or a
// repeated key is an error.
absl::StatusOr<CompressorSpec> parseCompressorSpec(absl::string_view text);

class OptionReader {
 public:
  explicit OptionReader(const CompressorSpec& spec) : spec_(spec) {}
  // Each leaves *value as it is when the key is absent.
  absl::Status read(absl::string_view key, uint32_t* value);
  absl::Status read(absl::string_view key, double* value);
  absl::Status read(absl::string_view key, bool* value);  // 1/0, true/false, yes/no
  // Fails on a key no read() asked for.
  absl::Status finish() const;

 private:
  const std::string* find(absl::string_view key);
  absl::Status bad(absl::string_view key, absl::string_view expected) const;

  const CompressorSpec& spec_;
  std::set<std::string> asked_;
};

}  // namespace sparseps

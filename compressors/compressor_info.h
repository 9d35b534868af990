#pragma once
// CompressorInfo: what a compressor file says of each compressor it defines (name, rule,
// paper, options, factory, and the code its segments travel as). The registry
// (registry.h) holds them by name; the code formats' tables (codes.cc) read the built-in
// ones' codes.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compressors/compressor.h"
#include "compressors/compressor_spec.h"

namespace sparseps {

struct CodeFormat;

struct CompressorOptionInfo {
  std::string key;
  std::string default_value;
  std::string meaning;
};

struct CompressorInfo {
  using Factory = std::function<absl::StatusOr<std::unique_ptr<Compressor>>(OptionReader&)>;

  std::string name;
  std::string rule;   // one line: what travels
  std::string paper;  // author, title, venue and year
  std::vector<CompressorOptionInfo> options;
  // Reads the options (OptionReader::finish is checked by the registry) and builds it.
  Factory factory;
  // The code its segments travel as (codes.h), defined in its file; null: floats. add()
  // (registry.h) makes it known to every decoder in the process (addCodeFormat).
  const CodeFormat* code = nullptr;
};

}  // namespace sparseps

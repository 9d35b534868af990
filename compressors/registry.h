#pragma once
// CompressorRegistry: maps a name to a factory. The methods' selectors come from it by
// name (optim/selection.cc maps MethodOptions.selection to "topk" or "sampled"). Explicit:
// the built-ins are added by registerBuiltinCompressors, a user's compressor by one add()
// call; add() rejects a duplicate name, make() lists the known names in its error.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compressors/compressor.h"

namespace sparseps {

class CompressorRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Compressor>()>;

  absl::Status add(const std::string& name, Factory factory);
  absl::StatusOr<std::unique_ptr<Compressor>> make(absl::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, Factory> factories_;
};

// Adds "topk" (exact), "sampled" (DGC sampled threshold), "randomk" and "dense".
void registerBuiltinCompressors(CompressorRegistry* registry);

// A built-in compressor by name (a registry with the built-ins only).
absl::StatusOr<std::unique_ptr<Compressor>> makeBuiltinCompressor(absl::string_view name);

}  // namespace sparseps

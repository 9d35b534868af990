#include "compressors/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compressors/dense.h"
#include "compressors/random_k.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"

namespace sparseps {

absl::Status CompressorRegistry::add(const std::string& name, Factory factory) {
  if (name.empty()) return absl::InvalidArgumentError("compressor name is empty");
  if (!factory) return absl::InvalidArgumentError(absl::StrCat("compressor '", name, "': no factory"));
  if (!factories_.emplace(name, std::move(factory)).second) {
    return absl::AlreadyExistsError(absl::StrCat("compressor '", name, "' is already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Compressor>> CompressorRegistry::make(absl::string_view name) const {
  auto it = factories_.find(std::string(name));
  if (it == factories_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown compressor '", name,
                                            "'; known: ", absl::StrJoin(names(), ", ")));
  }
  return it->second();
}

std::vector<std::string> CompressorRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, factory] : factories_) out.push_back(name);
  return out;
}

void registerBuiltinCompressors(CompressorRegistry* registry) {
  // The names are distinct constants: add() cannot fail here.
  (void)registry->add("topk", [] { return std::make_unique<ExactTopkCompressor>(); });
  (void)registry->add("sampled", [] { return std::make_unique<SampledThresholdCompressor>(); });
  (void)registry->add("randomk", [] { return std::make_unique<RandomKCompressor>(); });
  (void)registry->add("dense", [] { return std::make_unique<DenseCompressor>(); });
}

absl::StatusOr<std::unique_ptr<Compressor>> makeBuiltinCompressor(absl::string_view name) {
  CompressorRegistry registry;
  registerBuiltinCompressors(&registry);
  return registry.make(name);
}

}  // namespace sparseps

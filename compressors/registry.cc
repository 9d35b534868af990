#include "compressors/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compressors/codes.h"

namespace sparseps {

// Each built-in compressor file's CompressorInfos (SPARSEPS_BUILTIN_COMPRESSORS).
namespace builtin_compressors {
#define SPARSEPS_COMPRESSOR(file) std::vector<CompressorInfo> file();
#include "compressors/builtin_compressor_list.inc"
#undef SPARSEPS_COMPRESSOR
}  // namespace builtin_compressors

absl::Status CompressorRegistry::add(CompressorInfo info) {
  if (info.name.empty()) return absl::InvalidArgumentError("compressor name is empty");
  if (info.name.find_first_of(":,=") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("compressor name '", info.name, "' holds one of ':', ',' or '='"));
  }
  if (!info.factory) {
    return absl::InvalidArgumentError(absl::StrCat("compressor '", info.name, "': no factory"));
  }
  if (infos_.count(info.name) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("compressor '", info.name, "' is already registered"));
  }
  if (info.code != nullptr) {
    if (absl::Status s = addCodeFormat(*info.code); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("compressor '", info.name, "': ", s.message()));
    }
  }
  const std::string name = info.name;
  infos_.emplace(name, std::move(info));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Compressor>> CompressorRegistry::make(absl::string_view text) const {
  absl::StatusOr<CompressorSpec> spec = parseCompressorSpec(text);
  if (!spec.ok()) return spec.status();
  auto it = infos_.find(spec->name);
  if (it == infos_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown compressor '", spec->name,
                                            "'; known: ", absl::StrJoin(names(), ", ")));
  }
  OptionReader reader(*spec);
  absl::StatusOr<std::unique_ptr<Compressor>> made = it->second.factory(reader);
  if (!made.ok()) return made.status();
  if (absl::Status unknown = reader.finish(); !unknown.ok()) return unknown;
  return made;
}

const CompressorInfo* CompressorRegistry::info(absl::string_view name) const {
  auto it = infos_.find(std::string(name));
  return it != infos_.end() ? &it->second : nullptr;
}

std::vector<std::string> CompressorRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : infos_) out.push_back(name);
  return out;
}

std::string CompressorRegistry::help() const {
  std::string out;
  for (const auto& [name, info] : infos_) {
    absl::StrAppend(&out, "  ", name, ": ", info.rule, "\n");
    for (const CompressorOptionInfo& o : info.options) {
      absl::StrAppend(&out, "      ", o.key, "=", o.default_value, "  ", o.meaning, "\n");
    }
    absl::StrAppend(&out, "      (", info.paper, ")\n");
  }
  return out;
}

void registerBuiltinCompressors(CompressorRegistry* registry) {
  // Distinct constant names (Registry.EveryBuiltinNameMakesItsCompressor lists them): add()
  // cannot fail here.
#define SPARSEPS_COMPRESSOR(file) \
  for (CompressorInfo& info : builtin_compressors::file()) (void)registry->add(std::move(info));
#include "compressors/builtin_compressor_list.inc"
#undef SPARSEPS_COMPRESSOR
}

CompressorRegistry& compressorRegistry() {
  static CompressorRegistry* registry = [] {
    auto* r = new CompressorRegistry;
    registerBuiltinCompressors(r);
    return r;
  }();
  return *registry;
}

absl::StatusOr<std::unique_ptr<Compressor>> makeRegisteredCompressor(absl::string_view spec) {
  return compressorRegistry().make(spec);
}

}  // namespace sparseps

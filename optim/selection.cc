#include "optim/selection.h"

#include "compressors/half_rounding.h"
#include "compressors/registry.h"
#include "optim/fatal.h"

namespace sparseps {

namespace {

std::unique_ptr<Compressor> make(const std::string& spec, bool f16) {
  auto made = makeRegisteredCompressor(spec);
  // Built-in names, or a spec MethodOptions::validate accepted.
  requireOk(made.status());
  std::unique_ptr<Compressor> compressor = std::move(*made);
  if (f16) compressor = std::make_unique<HalfRounding>(std::move(compressor));
  return compressor;
}

}  // namespace

const char* selectorName(Selection selection) {
  switch (selection) {
    case Selection::kSampled: return "sampled";
    case Selection::kStrict: return "topk_strict";
    case Selection::kExact: break;
  }
  return "topk";
}

std::unique_ptr<Compressor> makeSelector(Selection selection, bool f16) {
  return make(selectorName(selection), f16);
}

std::unique_ptr<Compressor> makeCompressor(const MethodOptions& options) {
  if (options.gd.compressor.empty()) return makeSelector(options.selection, options.f16);
  return make(options.gd.compressor, options.f16);
}

}  // namespace sparseps

#include "optim/selection.h"

#include "compressors/half_rounding.h"
#include "compressors/registry.h"
#include "optim/fatal.h"

namespace sparseps {

std::unique_ptr<Compressor> makeSelector(Selection selection, bool f16) {
  auto made = makeBuiltinCompressor(selection == Selection::kSampled ? "sampled" : "topk");
  // Both names are built in; a failure here means the registry lost one.
  requireOk(made.status());
  std::unique_ptr<Compressor> selector = std::move(*made);
  if (f16) selector = std::make_unique<HalfRounding>(std::move(selector));
  return selector;
}

}  // namespace sparseps

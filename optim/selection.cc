#include "optim/selection.h"

#include "compressors/half_rounding.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"

namespace sparseps {

std::unique_ptr<Compressor> makeSelector(Selection selection, bool f16) {
  std::unique_ptr<Compressor> selector;
  if (selection == Selection::kSampled) {
    selector = std::make_unique<SampledThresholdCompressor>();
  } else {
    selector = std::make_unique<ExactTopkCompressor>();
  }
  if (f16) selector = std::make_unique<HalfRounding>(std::move(selector));
  return selector;
}

}  // namespace sparseps

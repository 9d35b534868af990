#include "optim/selection.h"

#include "compressors/threshold.h"
#include "compressors/topk.h"

namespace sparseps {

std::unique_ptr<Compressor> makeSelector(Selection selection) {
  switch (selection) {
    case Selection::kSampled:
      return std::make_unique<SampledThresholdCompressor>();
    case Selection::kExact:
      break;
  }
  return std::make_unique<ExactTopkCompressor>();
}

}  // namespace sparseps

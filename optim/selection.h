#pragma once
// The selector a rule uses for topk(x, r): exact top-k or DGC's sampled threshold
// (MethodOptions.selection), built by name through compressors/registry.h. One place maps
// the option to a kernel.

#include <memory>

#include "compressors/compressor.h"
#include "optim/method_options.h"

namespace sparseps {

// f16: values travel in half precision; the selector rounds what it selects
// (compressors/half_rounding.h) so that the rule's state keeps what was really sent.
std::unique_ptr<Compressor> makeSelector(Selection selection, bool f16 = false);

}  // namespace sparseps

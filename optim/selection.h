#pragma once
// The selector a rule uses for topk(x, r): exact top-k or DGC's sampled threshold
// (MethodOptions.selection), both from compressors/. One place maps the option to a kernel.

#include <memory>

#include "compressors/compressor.h"
#include "optim/method_options.h"

namespace sparseps {

std::unique_ptr<Compressor> makeSelector(Selection selection);

}  // namespace sparseps

#pragma once
// The selector a rule uses for topk(x, r): exact top-k, DGC's sampled threshold or the strict
// |x| > k-th largest (MethodOptions.selection), and gd's compressor (GdOptions.compressor), built by name
// through compressors/registry.h. One place maps the options to a kernel.

#include <memory>

#include "compressors/compressor.h"
#include "optim/method_options.h"

namespace sparseps {

// f16: values travel in half precision; the selector rounds what it selects
// (compressors/half_rounding.h) so that the rule's state keeps what was really sent.
std::unique_ptr<Compressor> makeSelector(Selection selection, bool f16 = false);

// The registry name of a selection's selector: "topk", "sampled" or "topk_strict".
const char* selectorName(Selection selection);

// gd's compressor: options.gd.compressor by name (validated by MethodOptions::validate), or
// the selector of options.selection when it is empty; rounded to half with options.f16.
std::unique_ptr<Compressor> makeCompressor(const MethodOptions& options);

}  // namespace sparseps

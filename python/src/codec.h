#pragma once
// sparseps._C.Compressor and decode: any compressor of the registry by name on a tensor,
// giving the bytes a push would carry (one segment in the wire format, checksummed), and
// their decoding back to a tensor, so a PyTorch training script (a DDP communication hook,
// say) can use the field's compressors and measure what they send.

#include <pybind11/pybind11.h>

namespace sparseps::python {

void bindCodec(pybind11::module_& m);

}  // namespace sparseps::python

"""The selection kernels and the registry's compressors on tensors.

Each reads a contiguous float32 CPU tensor in place (any shape, taken as flat) and returns
int64 indices into the flattened tensor (increasing) and the float32 values there. topk,
threshold and sampled_topk also take a CUDA tensor where sparseps was built with the CUDA
toolkit (HAS_CUDA_KERNELS): the selection runs on its GPU, with the same result, and the
indices and values come back as CPU tensors (what a push sends).

    indices, values = sparseps.compress.topk(grad, 0.01)
    dense = sparseps.compress.decompress(indices, values, grad.shape)

Every compressor of the C++ registry (QSGD, TernGrad, signSGD, 1-bit SGD, natural, fp16,
bf16, PowerSGD, random-k, the selections; compressors_help() lists them with their options
and papers) is also here by name, with the bytes a push carries:

    c = sparseps.compress.Compressor("qsgd:levels=4", error_feedback=True)
    payload = c.compress(grad, key=layer_index, step=step)   # bytes, checksummed
    approx = sparseps.compress.decode(payload, grad.shape, key=layer_index)
"""

import torch

from ._C import (HAS_CUDA_KERNELS, Compressor, compressor_names, compressors_help, decode,
                 random_k, sampled_topk, threshold, topk, topk_count)

__all__ = ["topk", "sampled_topk", "threshold", "random_k", "topk_count", "decompress",
           "HAS_CUDA_KERNELS", "Compressor", "decode", "compressor_names", "compressors_help"]


def decompress(indices: torch.Tensor, values: torch.Tensor, shape) -> torch.Tensor:
    """The dense tensor of `shape` that is `values` at `indices` and zero elsewhere."""
    out = torch.zeros(shape, dtype=values.dtype)
    out.view(-1).index_put_((indices,), values)
    return out

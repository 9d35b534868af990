#pragma once
// SegmentSpec: where one parameter segment lives in the flat float buffer and whether
// it is compressed. core's ParamLayout (built from a torch module) reduces to a list of
// these, so compressors/ and optim/ never need LibTorch.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sparseps {

struct SegmentSpec {
  uint32_t id = 0;
  size_t offset = 0;   // first element in the flat buffer
  size_t numel = 0;
  bool compressed = true;  // DGC's rule: tensors with dim > 1; biases and BN weights dense
  uint32_t rows = 0;       // the tensor's first dimension when dim > 1 (its matrix view), else 0
};

using SegmentSpecs = std::vector<SegmentSpec>;

// Floats in the flat buffer of a layout whose segments lie in offset order.
inline size_t flatNumel(const SegmentSpecs& specs) {
  return specs.empty() ? 0 : specs.back().offset + specs.back().numel;
}

// k = max(1, floor(numel * density)), capped at numel; 0 only for an empty segment.
inline size_t topkCount(size_t numel, double density) {
  if (numel == 0) return 0;
  double k = static_cast<double>(numel) * density;
  size_t kk = k < 1.0 ? 1 : static_cast<size_t>(k);
  return kk > numel ? numel : kk;
}

}  // namespace sparseps

#pragma once
// SegmentData: the content of one parameter segment inside a message, either dense
// (values holds all numel entries) or sparse (strictly increasing u32 indices with
// their f32 values). It is the currency between compressors/, optim/ and core's wire
// format: selection kernels produce it, methods build pushes and replies from it, and
// the wire format encodes and decodes it.

#include <cstdint>
#include <vector>

namespace sparseps {

struct SegmentData {
  uint32_t segment_id = 0;
  uint32_t numel = 0;          // length of the whole segment, not of values
  bool dense = false;          // true: values.size() == numel and indices is empty
  std::vector<uint32_t> indices;  // sparse only: strictly increasing, each < numel
  std::vector<float> values;      // dense: numel entries; sparse: one per index

  size_t nonzeros() const { return values.size(); }
};

}  // namespace sparseps

#pragma once
// ParamLayout: the flat-vector map of a model. Each named tensor of the model becomes a
// segment (name, offset, numel, shape) of one contiguous float32 buffer, in the order the
// model lists them. The server, the wire format and the methods only see this map (or the
// SegmentSpecs it reduces to), never LibTorch; FlatModel (flat_model.h) builds it from a
// torch module and makes the module's tensors views into the buffer. A fingerprint of the
// names, shapes and dtype lets a worker and a server check at connect time that they
// hold the same model.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "compressors/segment_spec.h"
#include "optim/option_names.h"

namespace sparseps {

// Which parameter tensors the sparse methods compress: multi-dim (DGC's rule: weights of
// dimension > 1; BN weights and biases travel dense) or all (every tensor alike, as the DGS
// reference does).
enum class CompressedTensors { kMultiDim, kAll };
inline constexpr NameTable<CompressedTensors, 2> kCompressedTensorsNames{
    {{"multi-dim", CompressedTensors::kMultiDim}, {"all", CompressedTensors::kAll}}};

struct ParamSegment {
  std::string name;            // torch's dotted name, e.g. "layer1.0.conv1.weight"
  size_t offset = 0;           // first element in the flat buffer
  size_t numel = 0;
  std::vector<int64_t> shape;
  bool compressed = false;     // by CompressedTensors: dim > 1 (the default), or every one
};

class ParamLayout {
 public:
  // Every segment is float32: the only dtype a flat buffer holds. It is hashed into the
  // fingerprint so that adding another dtype later changes the fingerprint.
  static constexpr std::string_view kDtype = "float32";

  // Appends a segment right after the last one, compressed as `which` says.
  void add(std::string name, std::vector<int64_t> shape,
           CompressedTensors which = CompressedTensors::kMultiDim);
  // Appends a segment with an explicit compressed flag.
  void add(std::string name, std::vector<int64_t> shape, bool compressed);

  const std::vector<ParamSegment>& segments() const { return segments_; }
  size_t size() const { return segments_.size(); }
  bool empty() const { return segments_.empty(); }
  const ParamSegment& operator[](size_t i) const { return segments_[i]; }

  size_t numel() const { return numel_; }  // elements in the whole flat buffer
  size_t compressedNumel() const;           // elements in compressed segments

  // Index of the segment with this name, or NotFound.
  absl::StatusOr<size_t> indexOf(std::string_view name) const;

  // FNV-1a 64 over the segment count and, per segment, its name, dtype, shape and
  // compressed flag. Stable across processes, builds and machines.
  uint64_t fingerprint() const;

 private:
  std::vector<ParamSegment> segments_;
  size_t numel_ = 0;
};

// One SegmentSpec per segment, id = segment index.
SegmentSpecs toSegmentSpecs(const ParamLayout& layout);

}  // namespace sparseps

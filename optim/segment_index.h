#pragma once
// SegmentIndex: finds a segment's spec (and its position in the spec list) from the
// segment id a message carries. Rules keep their per-segment state in vectors parallel
// to the specs, so state is keyed by the stable segment id, never by an address.

#include <cstddef>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "compressors/segment_spec.h"

namespace sparseps {

class SegmentIndex {
 public:
  explicit SegmentIndex(SegmentSpecs specs);

  const SegmentSpecs& specs() const { return specs_; }
  size_t size() const { return specs_.size(); }
  const SegmentSpec& operator[](size_t position) const { return specs_[position]; }
  // The position of segment `id` in specs(), or -1 when no spec has that id.
  ptrdiff_t find(uint32_t id) const;
  // One past the last element any segment covers: the flat buffer size the specs need.
  size_t extent() const { return extent_; }

 private:
  SegmentSpecs specs_;
  absl::flat_hash_map<uint32_t, size_t> position_;
  size_t extent_ = 0;
};

}  // namespace sparseps

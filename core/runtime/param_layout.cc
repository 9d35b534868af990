#include "core/runtime/param_layout.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

// FNV-1a 64 (Fowler, Noll, Vo): h = (h xor byte) * prime, from the offset basis.
class Fnv1a64 {
 public:
  void bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= kPrime;
    }
  }
  // Integers are hashed as 8 little-endian bytes, independent of the host's byte order.
  void u64(uint64_t v) {
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(v >> (8 * i));
    bytes(le, sizeof le);
  }
  // Length first, so that ("ab","c") and ("a","bc") differ.
  void str(std::string_view s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  uint64_t value() const { return h_; }

 private:
  static constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

size_t product(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

}  // namespace

void ParamLayout::add(std::string name, std::vector<int64_t> shape, CompressedTensors which) {
  const bool compressed = which == CompressedTensors::kAll || shape.size() > 1;
  add(std::move(name), std::move(shape), compressed);
}

void ParamLayout::add(std::string name, std::vector<int64_t> shape, bool compressed) {
  ParamSegment s;
  s.name = std::move(name);
  s.offset = numel_;
  s.numel = product(shape);
  s.shape = std::move(shape);
  s.compressed = compressed;
  numel_ += s.numel;
  segments_.push_back(std::move(s));
}

size_t ParamLayout::compressedNumel() const {
  size_t n = 0;
  for (const ParamSegment& s : segments_) n += s.compressed ? s.numel : 0;
  return n;
}

absl::StatusOr<size_t> ParamLayout::indexOf(std::string_view name) const {
  for (size_t i = 0; i < segments_.size(); ++i) {
    if (segments_[i].name == name) return i;
  }
  return absl::NotFoundError(
      absl::StrCat("no segment named '", std::string(name), "' in the layout"));
}

uint64_t ParamLayout::fingerprint() const {
  Fnv1a64 h;
  h.str("sparseps.ParamLayout.v1");
  h.u64(segments_.size());
  for (const ParamSegment& s : segments_) {
    h.str(s.name);
    h.str(kDtype);
    h.u64(s.shape.size());
    for (int64_t d : s.shape) h.u64(static_cast<uint64_t>(d));
    h.u64(s.compressed ? 1 : 0);
  }
  return h.value();
}

SegmentSpecs toSegmentSpecs(const ParamLayout& layout) {
  SegmentSpecs specs;
  specs.reserve(layout.size());
  for (size_t i = 0; i < layout.size(); ++i) {
    SegmentSpec spec;
    spec.id = static_cast<uint32_t>(i);
    spec.offset = layout[i].offset;
    spec.numel = layout[i].numel;
    spec.compressed = layout[i].compressed;
    if (layout[i].shape.size() > 1) spec.rows = static_cast<uint32_t>(layout[i].shape[0]);
    specs.push_back(spec);
  }
  return specs;
}

}  // namespace sparseps

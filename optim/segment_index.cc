#include "optim/segment_index.h"

#include <algorithm>
#include <utility>

#include "optim/fatal.h"

namespace sparseps {

SegmentIndex::SegmentIndex(SegmentSpecs specs) : specs_(std::move(specs)) {
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (!position_.emplace(specs_[i].id, i).second) {
      fatal("SegmentIndex: segment id ", specs_[i].id, " appears twice in the specs");
    }
    extent_ = std::max(extent_, specs_[i].offset + specs_[i].numel);
  }
}

ptrdiff_t SegmentIndex::find(uint32_t id) const {
  auto it = position_.find(id);
  return it == position_.end() ? -1 : static_cast<ptrdiff_t>(it->second);
}

}  // namespace sparseps

#pragma once
// Compressor: selects what of one segment travels. Compressors are stateless and
// return owned results; state such as residuals lives in decorators (error_feedback.h)
// and in the methods of optim/, keyed by the stable segment id, never by an address.

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "compressors/segment_data.h"

namespace sparseps {

// What a selection may depend on besides the values: the random-k seed is shared by
// worker and server (seed, segment id and step), so random-k indices need not travel.
struct SelectContext {
  uint32_t segment_id = 0;
  uint64_t step = 0;
  uint64_t seed = 0;
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  // Fills out (segment_id, numel, dense, indices, values) from x at the given density.
  // Sparse results have strictly increasing indices.
  virtual void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                        SegmentData* out) const = 0;
  virtual std::string name() const = 0;
};

}  // namespace sparseps

#pragma once
// ErrorFeedback: a decorator that gives any Compressor a memory of what it did not send
// (Seide et al. 2014 "1-bit SGD"; Karimireddy et al. 2019 "Error Feedback Fixes SignSGD";
// the residual accumulation of gradient dropping and DGC). Per segment id:
//   c = x + e;   s = C(c);   e = c - s
// so nothing is lost: sum of inputs == sum of what was sent + e, at every step.
// The residual is keyed by the stable segment id, never by an address, and can be saved
// and restored for checkpoints through residual()/setResidual().

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/compressor.h"

namespace sparseps {

class ErrorFeedback {
 public:
  explicit ErrorFeedback(std::unique_ptr<Compressor> inner) : inner_(std::move(inner)) {}

  // Compresses x + e (e: the residual of ctx.segment_id, zero at first) into out and keeps
  // the part not sent as the new residual. Not thread-safe for the same segment id.
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out);

  // Adds scale * s to the residual of s's segment: what a sender could not send after all
  // (the rounding of values that travel in half precision).
  void feedBack(const SegmentData& s, float scale);
  // The residual of a segment; empty if the segment was never compressed.
  absl::Span<const float> residual(uint32_t segment_id) const;
  // Replaces a segment's residual (checkpoint restore). An empty span removes it.
  void setResidual(uint32_t segment_id, absl::Span<const float> residual);
  void clear() { residuals_.clear(); }

  const Compressor& inner() const { return *inner_; }
  Compressor& inner() { return *inner_; }
  std::string name() const { return "ef(" + inner_->name() + ")"; }

 private:
  std::unique_ptr<Compressor> inner_;
  absl::flat_hash_map<uint32_t, std::vector<float>> residuals_;
};

}  // namespace sparseps

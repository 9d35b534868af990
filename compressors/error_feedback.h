#pragma once
// ErrorFeedback: a decorator that gives any Compressor a memory of what it did not send
// (Seide et al. 2014 "1-bit SGD"; Karimireddy et al. 2019 "Error Feedback Fixes SignSGD";
// the residual accumulation of gradient dropping and DGC). Per segment id:
//   c = x + e;   s = C(c);   e = c - s
// so nothing is lost: sum of inputs == sum of what was sent + e, at every step.
// The residual is keyed by the stable segment id, never by an address, and can be saved
// and restored for checkpoints through residual()/setResidual(). It lives in the memory of
// the VectorOps given (host by default; a GPU's for a GPU worker, whose x is then device
// memory and whose C must select there: compressors/kernels/device_kernels.h).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/compressor.h"
#include "compressors/segment_spec.h"
#include "compressors/vector_ops.h"

namespace sparseps {

class ErrorFeedback {
 public:
  explicit ErrorFeedback(std::unique_ptr<Compressor> inner,
                         std::shared_ptr<const VectorOps> ops = hostVectorOps())
      : inner_(std::move(inner)), ops_(std::move(ops)) {}

  // Compresses x + e (e: the residual of ctx.segment_id, zero at first) into out and keeps
  // the part not sent as the new residual. Not thread-safe for the same segment id.
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out);

  // Keeps the residuals of the compressed specs in one vector, each at its spec's offset
  // (zero now), so that compressSegments selects from all of them at once. Call before the
  // first compression.
  void layOut(const SegmentSpecs& specs);
  // compress() for every segment of a step, x flat with each segment at its offset. With
  // the residuals laid out at those offsets (layOut), the inner compressor compresses all
  // of them in one call (Compressor::compressSegments).
  void compressSegments(absl::Span<const float> x, absl::Span<const SegmentSelect> segments);
  // The laid-out residuals, for a caller that adds its x to them itself (in the same pass
  // that makes x) and then calls compressAdded.
  absl::Span<float> laidOut() { return laid_out_.span(); }
  // compressSegments once x has been added: s = C(e) and e = e - s for every segment,
  // whose residuals must be laid out at their offsets.
  void compressAdded(absl::Span<const SegmentSelect> segments);

  // Adds scale * s to the residual of each s's segment: what a sender could not send after
  // all (the rounding of values that travel in half precision). The laid-out residuals
  // take theirs in one operation.
  void feedBack(absl::Span<const SegmentData> sent, float scale);
  // The residual of a segment, in the ops' memory; empty if the segment was never
  // compressed.
  absl::Span<const float> residual(uint32_t segment_id) const;
  // Replaces a segment's residual with host values (checkpoint restore). An empty span
  // removes it (zeroes it when laid out).
  void setResidual(uint32_t segment_id, absl::Span<const float> residual);

  const Compressor& inner() const { return *inner_; }
  Compressor& inner() { return *inner_; }
  const VectorOps& ops() const { return *ops_; }
  std::string name() const { return "ef(" + inner_->name() + ")"; }

 private:
  // The residual of segment_id, made (zero) or remade at n elements.
  FloatArray& residualOf(uint32_t segment_id, size_t n);
  // Whether every segment's residual is its part of laid_out_ (at its offset).
  bool laidOutAs(absl::Span<const SegmentSelect> segments) const;

  std::unique_ptr<Compressor> inner_;
  std::shared_ptr<const VectorOps> ops_;
  FloatArray laid_out_;                  // layOut's vector; the residuals in it are views
  absl::flat_hash_set<uint32_t> laid_out_ids_;  // the segments whose residuals are in it
  std::vector<VectorOps::Placed> placed_;       // segments in laid_out_, kept to reuse the room
  absl::flat_hash_map<uint32_t, FloatArray> residuals_;
};

}  // namespace sparseps

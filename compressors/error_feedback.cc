#include "compressors/error_feedback.h"

namespace sparseps {

FloatArray& ErrorFeedback::residualOf(uint32_t segment_id, size_t n) {
  FloatArray& e = residuals_[segment_id];
  if (e.size() != n) e = ops_->zeros(n);  // first use (or a reshaped segment)
  return e;
}

void ErrorFeedback::compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                             SegmentData* out) {
  FloatArray& e = residualOf(ctx.segment_id, x.size());
  ops_->combine(e.span(), 1.0f, e.span(), 1.0f, x);  // c = x + e, in place
  inner_->compress(e.span(), density, ctx, out);
  ops_->addSegment(e.span(), *out, -1.0f);           // e = c - s
}

void ErrorFeedback::feedBack(const SegmentData& s, float scale) {
  ops_->addSegment(residualOf(s.segment_id, s.numel).span(), s, scale);
}

absl::Span<const float> ErrorFeedback::residual(uint32_t segment_id) const {
  auto it = residuals_.find(segment_id);
  if (it == residuals_.end()) return {};
  return it->second.span();
}

void ErrorFeedback::setResidual(uint32_t segment_id, absl::Span<const float> residual) {
  if (residual.empty()) {
    residuals_.erase(segment_id);
    return;
  }
  ops_->copyIn(residualOf(segment_id, residual.size()).span(), residual);
}

}  // namespace sparseps

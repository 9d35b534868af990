#include "compressors/error_feedback.h"

#include "compressors/apply.h"

namespace sparseps {

void ErrorFeedback::compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                             SegmentData* out) {
  std::vector<float>& e = residuals_[ctx.segment_id];
  if (e.size() != x.size()) e.assign(x.size(), 0.0f);  // first use (or a reshaped segment)
  axpy(1.0f, x, absl::MakeSpan(e));                     // c = x + e, in place
  inner_->compress(e, density, ctx, out);
  scatterAdd(absl::MakeSpan(e), *out, -1.0f);           // e = c - s
}

void ErrorFeedback::feedBack(const SegmentData& s, float scale) {
  std::vector<float>& e = residuals_[s.segment_id];
  if (e.size() != s.numel) e.assign(s.numel, 0.0f);
  scatterAdd(absl::MakeSpan(e), s, scale);
}

absl::Span<const float> ErrorFeedback::residual(uint32_t segment_id) const {
  auto it = residuals_.find(segment_id);
  if (it == residuals_.end()) return {};
  return it->second;
}

void ErrorFeedback::setResidual(uint32_t segment_id, absl::Span<const float> residual) {
  if (residual.empty()) {
    residuals_.erase(segment_id);
  } else {
    residuals_[segment_id].assign(residual.begin(), residual.end());
  }
}

}  // namespace sparseps

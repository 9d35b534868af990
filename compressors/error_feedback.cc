#include "compressors/error_feedback.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

// A caller's bug: the process ends, saying which.
[[noreturn]] void fatal(const std::string& message) {
  std::fprintf(stderr, "sparseps fatal: ErrorFeedback%s\n", message.c_str());
  std::abort();
}

}  // namespace

FloatArray& ErrorFeedback::residualOf(uint32_t segment_id, size_t n) {
  FloatArray& e = residuals_[segment_id];
  if (e.size() == n) return e;
  if (laid_out_ids_.contains(segment_id)) {  // the layout fixed its size
    fatal(absl::StrCat(": segment ", segment_id, " is laid out with ", e.size(),
                       " elements, given ", n));
  }
  e = ops_->zeros(n);  // first use (or a reshaped segment)
  return e;
}

void ErrorFeedback::compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                             SegmentData* out) {
  FloatArray& e = residualOf(ctx.segment_id, x.size());
  ops_->combine(e.span(), 1.0f, e.span(), 1.0f, x);  // c = x + e, in place
  inner_->compress(e.span(), density, ctx, out);
  ops_->applySegments(e.span(), {{0, out}}, -1.0f, VectorOps::Dense::kAdd);  // e = c - s
}

void ErrorFeedback::layOut(const SegmentSpecs& specs) {
  size_t extent = 0;
  for (const SegmentSpec& spec : specs) {
    if (spec.compressed) extent = std::max(extent, spec.offset + spec.numel);
  }
  residuals_.clear();
  laid_out_ids_.clear();
  laid_out_ = ops_->zeros(extent);
  for (const SegmentSpec& spec : specs) {
    if (!spec.compressed) continue;
    float* at = spec.numel == 0 ? nullptr : laid_out_.data() + spec.offset;
    residuals_[spec.id] = FloatArray(at, spec.numel, nullptr);
    laid_out_ids_.insert(spec.id);
  }
}

bool ErrorFeedback::laidOutAs(absl::Span<const SegmentSelect> segments) const {
  for (const SegmentSelect& s : segments) {
    auto it = residuals_.find(s.ctx.segment_id);
    if (!laid_out_ids_.contains(s.ctx.segment_id) || it->second.size() != s.numel) return false;
    if (s.numel > 0 && it->second.data() != laid_out_.data() + s.offset) return false;
  }
  return true;
}

void ErrorFeedback::compressSegments(absl::Span<const float> x,
                                     absl::Span<const SegmentSelect> segments) {
  if (!laidOutAs(segments)) {
    for (const SegmentSelect& s : segments) {
      compress(x.subspan(s.offset, s.numel), s.density, s.ctx, s.out);
    }
    return;
  }
  ops_->accumulateSegments(laid_out_.span(), 1.0f, 1.0f, x, {}, 0.0f, segments);  // c = e + x
  compressAdded(segments);
}

void ErrorFeedback::compressAdded(absl::Span<const SegmentSelect> segments) {
  if (!laidOutAs(segments)) {  // its x went to no residual
    fatal(
        "::compressAdded: the segments' residuals are not laid out at their offsets (call "
        "layOut with their specs first)");
  }
  placed_.clear();
  for (const SegmentSelect& s : segments) placed_.push_back({s.offset, s.out});
  inner_->compressSegments(laid_out_.span(), segments);
  ops_->applySegments(laid_out_.span(), placed_, -1.0f, VectorOps::Dense::kAdd);  // e = c - s
}

void ErrorFeedback::feedBack(absl::Span<const SegmentData> sent, float scale) {
  placed_.clear();
  for (const SegmentData& s : sent) {
    FloatArray& e = residualOf(s.segment_id, s.numel);
    if (!laid_out_ids_.contains(s.segment_id)) {
      ops_->applySegments(e.span(), {{0, &s}}, scale, VectorOps::Dense::kAdd);
    } else if (s.numel > 0) {
      placed_.push_back({static_cast<size_t>(e.data() - laid_out_.data()), &s});
    }
  }
  if (!placed_.empty())
    ops_->applySegments(laid_out_.span(), placed_, scale, VectorOps::Dense::kAdd);
}

absl::Span<const float> ErrorFeedback::residual(uint32_t segment_id) const {
  auto it = residuals_.find(segment_id);
  if (it == residuals_.end()) return {};
  return it->second.span();
}

void ErrorFeedback::setResidual(uint32_t segment_id, absl::Span<const float> residual) {
  if (residual.empty()) {
    if (!laid_out_ids_.contains(segment_id)) {
      residuals_.erase(segment_id);
      return;
    }
    FloatArray& e = residuals_[segment_id];
    ops_->copyIn(e.span(), std::vector<float>(e.size(), 0.0f));
    return;
  }
  ops_->copyIn(residualOf(segment_id, residual.size()).span(), residual);
}

}  // namespace sparseps

#include "optim/segment_worker.h"

#include "optim/fatal.h"
#include "optim/message_ops.h"

namespace sparseps {

SegmentWorker::SegmentWorker(const SegmentSpecs& specs, const MethodOptions& options)
    : index_(specs), options_(options) {}

void SegmentWorker::applyReply(const Message& reply, absl::Span<float> w) {
  applyModelReply(reply, index_, w);
}

absl::Span<const float> SegmentWorker::foldedGradient(const SegmentSpec& spec,
                                                      absl::Span<const float> grad,
                                                      absl::Span<const float> w, float coef) {
  const float wd = static_cast<float>(options_.weight_decay);
  g_.resize(spec.numel);
  const float* gr = grad.data() + spec.offset;
  const float* ww = w.data() + spec.offset;
  for (size_t j = 0; j < spec.numel; ++j) g_[j] = coef * (gr[j] + wd * ww[j]);
  return g_;
}

void SegmentWorker::checkSizes(absl::Span<const float> grad, absl::Span<const float> w) const {
  if (grad.size() < index_.extent() || w.size() < index_.extent()) {
    fatal("worker rule: gradient (", grad.size(), ") and model (", w.size(), ") must cover the ",
          index_.extent(), " elements of the segments");
  }
}

std::vector<std::vector<float>> SegmentWorker::zeroState(bool compressed_only) const {
  std::vector<std::vector<float>> state(index_.size());
  for (size_t i = 0; i < index_.size(); ++i) {
    if (!compressed_only || index_[i].compressed) state[i].assign(index_[i].numel, 0.0f);
  }
  return state;
}

}  // namespace sparseps

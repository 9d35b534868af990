#include "optim/segment_worker.h"

#include <algorithm>

#include "optim/fatal.h"
#include "optim/message_ops.h"
#include "optim/worker_state.h"

namespace sparseps {

SegmentWorker::SegmentWorker(const SegmentSpecs& specs, const MethodOptions& options)
    : index_(specs), options_(options) {
  size_t largest = 0;
  for (const SegmentSpec& spec : index_.specs()) largest = std::max(largest, spec.numel);
  g_.resize(largest);
}

void SegmentWorker::applyReply(const Message& reply, absl::Span<float> w) {
  applyModelReply(reply, index_, w);
}

absl::Span<const float> SegmentWorker::foldedGradient(const SegmentSpec& spec,
                                                      absl::Span<const float> grad,
                                                      absl::Span<const float> w, float wd,
                                                      float coef) {
  float* g = g_.data();
  forEachFolded(spec, grad, w, wd, [g, coef](size_t j, float gj) { g[j] = coef * gj; });
  return absl::MakeConstSpan(g, spec.numel);
}

void SegmentWorker::makePush(absl::Span<const float> grad, absl::Span<const float> w,
                             const StepContext& ctx, Message* push) {
  if (grad.size() < index_.extent() || w.size() < index_.extent()) {
    fatal("worker rule: gradient (", grad.size(), ") and model (", w.size(), ") must cover the ",
          index_.extent(), " elements of the segments");
  }
  push->resize(index_.size());
  fillPush(grad, w, ctx, push);
}

std::vector<std::vector<float>> SegmentWorker::zeroState(bool compressed_only) const {
  std::vector<std::vector<float>> state(index_.size());
  for (size_t i = 0; i < index_.size(); ++i) {
    if (!compressed_only || index_[i].compressed) state[i].assign(index_[i].numel, 0.0f);
  }
  return state;
}

std::string SegmentWorker::saveState() const {
  WorkerStateView state;
  for (const auto* per_spec : arrays_) {
    state.arrays.emplace_back(per_spec->begin(), per_spec->end());
  }
  for (const ErrorFeedback* memory : memories_) {
    state.residuals.emplace_back();
    for (const SegmentSpec& spec : index_.specs()) {
      if (spec.compressed) state.residuals.back().push_back(memory->residual(spec.id));
    }
  }
  for (const auto* per_spec : index_lists_) {
    state.index_lists.emplace_back(per_spec->begin(), per_spec->end());
  }
  state.compressors.assign(compressors_.begin(), compressors_.end());
  return writeWorkerState(index_.specs(), state);
}

absl::Status SegmentWorker::loadState(const std::string& bytes) {
  std::vector<std::vector<size_t>> array_sizes;
  for (const auto* per_spec : arrays_) {
    array_sizes.emplace_back();
    for (const std::vector<float>& a : *per_spec) array_sizes.back().push_back(a.size());
  }
  absl::StatusOr<WorkerState> state =
      loadWorkerState(bytes, index_.specs(), array_sizes, memories_.size(), index_lists_.size(),
                      compressors_, options_.seed);
  if (!state.ok()) return state.status();
  for (size_t k = 0; k < arrays_.size(); ++k) *arrays_[k] = std::move(state->arrays[k]);
  for (size_t k = 0; k < index_lists_.size(); ++k) {
    *index_lists_[k] = std::move(state->index_lists[k]);
  }
  for (size_t m = 0; m < memories_.size(); ++m) {
    size_t next = 0;
    for (const SegmentSpec& spec : index_.specs()) {
      if (spec.compressed) memories_[m]->setResidual(spec.id, state->residuals[m][next++]);
    }
  }
  return absl::OkStatus();
}

}  // namespace sparseps

#include "optim/segment_worker.h"

#include <algorithm>
#include <utility>

#include "optim/fatal.h"
#include "optim/message_ops.h"
#include "optim/worker_state.h"

namespace sparseps {
namespace {

// Host views of vectors in the rule's memory: the vectors themselves on the host, copies
// (kept in `copies`, whose element buffers do not move as it grows) on a GPU.
class HostViews {
 public:
  explicit HostViews(const VectorOps& ops) : ops_(ops) {}
  absl::Span<const float> of(absl::Span<const float> x) {
    if (!ops_.device() || x.empty()) return x;
    copies_.emplace_back(x.size());
    ops_.copyOut(absl::MakeSpan(copies_.back()), x, 1.0f);
    return copies_.back();
  }

 private:
  const VectorOps& ops_;
  std::vector<std::vector<float>> copies_;
};

}  // namespace

SegmentWorker::SegmentWorker(const SegmentSpecs& specs, const MethodOptions& options,
                             std::shared_ptr<const VectorOps> ops)
    : index_(specs), options_(options), ops_(std::move(ops)) {
  for (const SegmentSpec& spec : index_.specs()) largest_ = std::max(largest_, spec.numel);
  g_ = segmentScratch();
}

void SegmentWorker::applyReply(const Message& reply, absl::Span<float> w) {
  applyModelReply(reply, index_, w, *ops_);
}

absl::Span<const float> SegmentWorker::foldedGradient(const SegmentSpec& spec,
                                                      absl::Span<const float> grad,
                                                      absl::Span<const float> w, float wd,
                                                      float coef) {
  absl::Span<float> g = g_.span().subspan(0, spec.numel);
  ops_->fold(g, coef, segmentOf(grad, spec), segmentOf(w, spec), wd);
  return g;
}

void SegmentWorker::pushDense(SegmentData* s, const SegmentSpec& spec, absl::Span<const float> x,
                              float scale) const {
  ops_->copyOut(denseValues(s, spec.id, spec.numel), x, scale);
}

void SegmentWorker::pushFolded(SegmentData* s, const SegmentSpec& spec,
                               absl::Span<const float> grad, absl::Span<const float> w, float wd,
                               float coef) {
  // On the host the message is the rule's memory: the fold writes it in one pass.
  if (!ops_->device()) {
    ops_->fold(denseValues(s, spec.id, spec.numel), coef, segmentOf(grad, spec),
               segmentOf(w, spec), wd);
    return;
  }
  pushDense(s, spec, foldedGradient(spec, grad, w, wd, coef));
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

std::vector<FloatArray> SegmentWorker::zeroState(bool compressed_only) const {
  std::vector<FloatArray> state;
  state.reserve(index_.size());
  for (const SegmentSpec& spec : index_.specs()) {
    state.push_back(ops_->zeros(!compressed_only || spec.compressed ? spec.numel : 0));
  }
  return state;
}

std::string SegmentWorker::saveState() const {
  HostViews host(*ops_);
  WorkerStateView state;
  for (const auto* per_spec : arrays_) {
    state.arrays.emplace_back();
    for (const FloatArray& a : *per_spec) state.arrays.back().push_back(host.of(a.span()));
  }
  for (const ErrorFeedback* memory : memories_) {
    state.residuals.emplace_back();
    for (const SegmentSpec& spec : index_.specs()) {
      if (spec.compressed) state.residuals.back().push_back(host.of(memory->residual(spec.id)));
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
    for (const FloatArray& a : *per_spec) array_sizes.back().push_back(a.size());
  }
  absl::StatusOr<WorkerState> state =
      loadWorkerState(bytes, index_.specs(), array_sizes, memories_.size(), index_lists_.size(),
                      compressors_, options_.seed);
  if (!state.ok()) return state.status();
  for (size_t k = 0; k < arrays_.size(); ++k) {
    for (size_t i = 0; i < index_.size(); ++i) {
      ops_->copyIn((*arrays_[k])[i].span(), state->arrays[k][i]);
    }
  }
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

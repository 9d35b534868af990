#include "optim/segment_worker.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>

#include "optim/fatal.h"
#include "optim/message_ops.h"
#include "optim/worker_state.h"

namespace sparseps {
namespace {

// Host views of vectors in the rule's memory: the vectors themselves on the host, copies
// (kept in `copies_`, whose element buffers do not move as it grows) on a GPU, filled
// together: one copy back and one wait for each kFetchFloats of a checkpoint's vectors
// (the copy's device and pinned buffers grow to what one copy holds, and stay).
class HostViews {
 public:
  explicit HostViews(const VectorOps& ops) : ops_(ops) {}
  // x's view, to be read after fetch().
  absl::Span<const float> of(absl::Span<const float> x) {
    if (!ops_.device() || x.empty()) return x;
    copies_.emplace_back(x.size());
    pending_.push_back({absl::MakeSpan(copies_.back()), x, 1.0f});
    pending_floats_ += x.size();
    if (pending_floats_ >= kFetchFloats) fetch();
    return copies_.back();
  }
  void fetch() {
    if (!pending_.empty()) ops_.copyOut(pending_, 0.0f);
    pending_.clear();
    pending_floats_ = 0;
  }

 private:
  static constexpr size_t kFetchFloats = size_t{16} << 20;  // 64 MiB
  const VectorOps& ops_;
  std::vector<std::vector<float>> copies_;
  std::vector<VectorOps::HostCopy> pending_;
  size_t pending_floats_ = 0;
};

}  // namespace

bool SegmentWorker::covers(Specs which, const SegmentSpec& spec) {
  return which == Specs::kAll || !spec.compressed;
}

SpecVectors::SpecVectors(FloatArray all, const SegmentIndex& index) : all_(std::move(all)) {
  parts_.reserve(index.size());
  for (const SegmentSpec& spec : index.specs()) parts_.push_back(segmentOf(all_.span(), spec));
}

SegmentWorker::SegmentWorker(const SegmentSpecs& specs, const MethodOptions& options,
                             std::shared_ptr<const VectorOps> ops)
    : index_(specs), options_(options), ops_(std::move(ops)) {
  by_offset_.resize(index_.size());
  std::iota(by_offset_.begin(), by_offset_.end(), size_t{0});
  std::sort(by_offset_.begin(), by_offset_.end(),
            [&](size_t a, size_t b) { return index_[a].offset < index_[b].offset; });
  // The state vectors give each spec its own part of one vector.
  for (size_t k = 1; k < by_offset_.size(); ++k) {
    const SegmentSpec& before = index_[by_offset_[k - 1]];
    if (before.offset + before.numel > index_[by_offset_[k]].offset) {
      fatal("worker rule: segments ", before.id, " and ", index_[by_offset_[k]].id, " overlap");
    }
  }
  for (size_t i : by_offset_) {
    const SegmentSpec& spec = index_[i];
    if (!spec.compressed) dense_.push_back({spec.offset, spec.numel, 0.0, {}, nullptr});
  }
}

void SegmentWorker::checkPlaceable() const {
  if (index_.extent() > UINT32_MAX) {
    fatal("worker rule: the segments cover ", index_.extent(),
          " elements; positions in them are u32, at most 2^32 - 1");
  }
}

absl::Span<float> SegmentWorker::gradientRoom() {
  if (g_.size() == 0) g_ = zeroState();  // made at first use: not every rule folds
  return g_.all();
}

void SegmentWorker::applyReply(const Message& reply, absl::Span<float> w) {
  applyModelReply(reply, index_, w, *ops_);
}

absl::Span<const float> SegmentWorker::foldedGradient(const SegmentSpec& spec,
                                                      absl::Span<const float> grad,
                                                      absl::Span<const float> w, float wd,
                                                      float coef) {
  absl::Span<float> g = segmentOf(gradientRoom(), spec);
  ops_->fold(g, coef, segmentOf(grad, spec), segmentOf(w, spec), wd);
  return g;
}

absl::Span<const float> SegmentWorker::foldedGradients(absl::Span<const float> grad,
                                                       absl::Span<const float> w, float wd,
                                                       float coef) {
  const size_t n = index_.extent();
  absl::Span<float> g = gradientRoom();
  ops_->fold(g, coef, grad.subspan(0, n), w.subspan(0, n), wd);
  return g;
}

void SegmentWorker::pushDense(Message* push, absl::Span<const float> x, float scale, Specs which) {
  pushFolded(push, x, {}, 0.0f, scale, which);
}

// On the host the message's values are written in the one pass that folds them; on a GPU
// the fold rides on the gather of the copy back.
void SegmentWorker::pushFolded(Message* push, absl::Span<const float> grad,
                               absl::Span<const float> w, float wd, float coef, Specs which) {
  copies_.clear();
  for (size_t i = 0; i < index_.size(); ++i) {
    const SegmentSpec& spec = index_[i];
    if (!covers(which, spec)) continue;
    copies_.push_back({denseValues(&(*push)[i], spec.id, spec.numel), segmentOf(grad, spec), coef,
                       wd == 0.0f ? absl::Span<const float>() : segmentOf(w, spec)});
  }
  ops_->copyOut(copies_, wd);
}

absl::Span<const SegmentSelect> SegmentWorker::compressedSegments(Message* push, double density,
                                                                  uint64_t step) {
  selects_.clear();
  for (size_t i : by_offset_) {
    const SegmentSpec& spec = index_[i];
    if (!spec.compressed) continue;
    selects_.push_back({spec.offset, spec.numel, density,
                        SelectContext{spec.id, step, options_.seed, spec.rows}, &(*push)[i]});
  }
  return selects_;
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

std::string SegmentWorker::saveState() const {
  HostViews host(*ops_);
  WorkerStateView state;
  for (const auto* per_spec : arrays_) {
    state.arrays.emplace_back();
    for (size_t i = 0; i < per_spec->size(); ++i) {
      state.arrays.back().push_back(host.of((*per_spec)[i]));
    }
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
  host.fetch();
  return writeWorkerState(index_.specs(), state);
}

absl::Status SegmentWorker::loadState(const std::string& bytes) {
  std::vector<std::vector<size_t>> array_sizes;
  for (const auto* per_spec : arrays_) {
    array_sizes.emplace_back();
    for (size_t i = 0; i < per_spec->size(); ++i) {
      array_sizes.back().push_back((*per_spec)[i].size());
    }
  }
  absl::StatusOr<WorkerState> state =
      loadWorkerState(bytes, index_.specs(), array_sizes, memories_.size(), index_lists_.size(),
                      compressors_, options_.seed);
  if (!state.ok()) return state.status();
  for (size_t k = 0; k < arrays_.size(); ++k) {
    for (size_t i = 0; i < index_.size(); ++i) {
      ops_->copyIn((*arrays_[k])[i], state->arrays[k][i]);
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

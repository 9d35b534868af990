#pragma once
// SegmentWorker: what every worker rule shares, so a method file holds only its update:
// the specs, the vectors of one memory (VectorOps: host for CPU workers, a GPU's for GPU
// workers; the same rule runs on both) laid out as the flat parameters (SpecVectors), the
// folded gradient g = grad + wd * w, a step's compressed segments for one selection of
// them all, its dense pushes in one copy back, applyReply (a dense reply segment is the
// model, a sparse one a delta: see method.h), and checkpoints of the state a method registers with
// keepState (per-segment vectors such as momentum u, error-feedback residuals, index lists, and
// what a compressor carries between steps, such as PowerSGD's Q), in optim/worker_state.h's layout,
// the same from either memory. A rule refills the push message in place (one slot per spec, in spec
// order), so the vectors of the last step's push are reused. A rule reads and writes its vectors,
// grad and w only through the VectorOps and the selectors (which run on either memory); what it
// puts in the push is host memory.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/error_feedback.h"
#include "compressors/vector_ops.h"
#include "optim/method.h"
#include "optim/segment_index.h"

namespace sparseps {

// One vector per spec in a rule's memory, laid out as the flat parameters: spec i's part
// at spec.offset of one vector, all(), so that a step's element-wise work and its
// selection can cover every segment at once.
class SpecVectors {
 public:
  SpecVectors() = default;
  SpecVectors(FloatArray all, const SegmentIndex& index);
  absl::Span<float> all() { return all_.span(); }
  absl::Span<const float> all() const { return all_.span(); }
  absl::Span<float> operator[](size_t i) { return parts_[i]; }
  absl::Span<const float> operator[](size_t i) const { return parts_[i]; }
  size_t size() const { return parts_.size(); }

 private:
  FloatArray all_;
  std::vector<absl::Span<float>> parts_;  // per spec, in all_
};

class SegmentWorker : public WorkerRule {
 public:
  SegmentWorker(const SegmentSpecs& specs, const MethodOptions& options,
                std::shared_ptr<const VectorOps> ops);
  // keepState holds pointers into the object: it stays where it was made.
  SegmentWorker(const SegmentWorker&) = delete;
  SegmentWorker& operator=(const SegmentWorker&) = delete;
  // Checks that grad and w cover every segment, gives the push one slot per spec (each
  // keeping its buffers from the last step), and has the method fill it (fillPush).
  void makePush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) final;
  void applyReply(const Message& reply, absl::Span<float> w) override;
  bool readsBorrowedDense() const override { return true; }  // applyReply: VectorOps
  std::string saveState() const override;
  absl::Status loadState(const std::string& bytes) override;

 protected:
  // Which specs a call covers.
  enum class Specs { kDense, kAll };
  static bool covers(Specs which, const SegmentSpec& spec);

  // Registers state for checkpoints, in a fixed order (call from the constructor): one
  // vector per spec, as zeroState made it; or an error-feedback memory, whose residuals
  // of the compressed segments are saved (zeros where none was made yet). A memory laid
  // out with the specs (ErrorFeedback::layOut) selects from every segment at once.
  void keepState(SpecVectors* per_spec) { arrays_.push_back(per_spec); }
  void keepState(ErrorFeedback* memory) { memories_.push_back(memory); }
  // One sorted index list per spec (as the last push's indices).
  void keepState(std::vector<std::vector<uint32_t>>* per_spec) { index_lists_.push_back(per_spec); }
  // A compressor's own state of the compressed segments (Compressor::savedState).
  void keepState(Compressor* compressor) { compressors_.push_back(compressor); }
  // A zero vector per spec (state such as u or v) in the rule's memory.
  SpecVectors zeroState() const { return SpecVectors(ops_->zeros(index_.extent()), index_); }
  // coef * (grad + wd * w) over `spec`, valid until the next call for that spec.
  absl::Span<const float> foldedGradient(const SegmentSpec& spec, absl::Span<const float> grad,
                                         absl::Span<const float> w, float wd, float coef = 1.0f);
  // The same over every spec at once, laid out as the flat parameters.
  absl::Span<const float> foldedGradients(absl::Span<const float> grad, absl::Span<const float> w,
                                          float wd, float coef);
  // The method's update: fills slot i of the push for spec i.
  virtual void fillPush(absl::Span<const float> grad, absl::Span<const float> w,
                        const StepContext& ctx, Message* push) = 0;
  // Makes the push's slot of each spec of `which` the dense segment holding scale * its
  // part of x (x laid out as the flat parameters, in the rule's memory): one copy back
  // per step.
  void pushDense(Message* push, absl::Span<const float> x, float scale, Specs which);
  // The same with coef * (grad + wd * w).
  void pushFolded(Message* push, absl::Span<const float> grad, absl::Span<const float> w, float wd,
                  float coef, Specs which);
  // The step's compressed segments of the push, in increasing offset order, for a
  // selection from vectors laid out as the flat parameters (Compressor::compressSegments),
  // valid until the next call.
  absl::Span<const SegmentSelect> compressedSegments(Message* push, double density, uint64_t step);
  // The dense specs' parts of vectors laid out as the flat parameters, in increasing offset
  // order (offset and numel only), for VectorOps::accumulateSegments.
  absl::Span<const SegmentSelect> denseSegments() const { return dense_; }
  // The positions, in vectors laid out as the flat parameters, of each spec's `indices(i)`
  // (increasing indices within spec i), increasing; valid until the next call.
  template <typename IndicesOf>
  absl::Span<const uint32_t> placedIndices(IndicesOf indices) {
    checkPlaceable();
    placed_.clear();
    for (size_t i : by_offset_) {
      const size_t offset = index_[i].offset;
      for (uint32_t j : indices(i)) placed_.push_back(static_cast<uint32_t>(offset + j));
    }
    return placed_;
  }

  SegmentIndex index_;
  MethodOptions options_;
  std::shared_ptr<const VectorOps> ops_;

 private:
  // foldedGradient's vector.
  absl::Span<float> gradientRoom();
  // Fatal unless every position in the specs' extent fits placedIndices' u32.
  void checkPlaceable() const;

  std::vector<size_t> by_offset_;  // the specs' positions in increasing offset order
  std::vector<SegmentSelect> dense_;  // denseSegments()
  SpecVectors g_;                  // gradientRoom's
  std::vector<VectorOps::HostCopy> copies_;
  std::vector<SegmentSelect> selects_;
  std::vector<uint32_t> placed_;
  std::vector<SpecVectors*> arrays_;
  std::vector<ErrorFeedback*> memories_;
  std::vector<std::vector<std::vector<uint32_t>>*> index_lists_;
  std::vector<Compressor*> compressors_;
};

// The segment `spec` covers in a flat buffer.
template <typename T>
absl::Span<T> segmentOf(absl::Span<T> flat, const SegmentSpec& spec) {
  return flat.subspan(spec.offset, spec.numel);
}

}  // namespace sparseps

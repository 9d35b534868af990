#pragma once
// SegmentWorker: what every worker rule shares, so a method file holds only its update:
// the specs, the vectors of one memory (VectorOps: host for CPU workers, a GPU's for GPU
// workers; the same rule runs on both), the folded gradient g = grad + wd * w of one
// segment, applyReply (a dense reply segment is the model, a sparse one a delta: see
// method.h), and checkpoints of the state a method registers with keepState (per-segment
// vectors such as momentum u, error-feedback residuals, index lists, and what a compressor
// carries between steps, such as PowerSGD's Q), in optim/worker_state.h's layout, the
// same from either memory. A rule refills the push message in place (one slot per spec,
// in spec order), so the vectors of the last step's push are reused.
// A rule reads and writes its vectors, grad and w only through the VectorOps and the
// selectors (which run on either memory); what it puts in the push is host memory.

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
  // Registers state for checkpoints, in a fixed order (call from the constructor): one
  // vector per spec, as zeroState made it; or an error-feedback memory, whose residuals
  // of the compressed segments are saved (zeros where none was made yet).
  void keepState(std::vector<FloatArray>* per_spec) { arrays_.push_back(per_spec); }
  void keepState(ErrorFeedback* memory) { memories_.push_back(memory); }
  // One sorted index list per spec (as the last push's indices).
  void keepState(std::vector<std::vector<uint32_t>>* per_spec) { index_lists_.push_back(per_spec); }
  // A compressor's own state of the compressed segments (Compressor::savedState).
  void keepState(Compressor* compressor) { compressors_.push_back(compressor); }
  // One zero vector per spec (state such as u or v), or only for compressed specs (the
  // others empty), in the rule's memory.
  std::vector<FloatArray> zeroState(bool compressed_only) const;
  // Room for one segment's values (the largest) in the rule's memory.
  FloatArray segmentScratch() const { return ops_->zeros(largest_); }
  // coef * (grad + wd * w) over `spec`, valid until the next call.
  absl::Span<const float> foldedGradient(const SegmentSpec& spec, absl::Span<const float> grad,
                                         absl::Span<const float> w, float wd, float coef = 1.0f);
  // The method's update: fills slot i of the push for spec i.
  virtual void fillPush(absl::Span<const float> grad, absl::Span<const float> w,
                        const StepContext& ctx, Message* push) = 0;
  // Makes *s the dense segment of spec holding scale * x (x in the rule's memory).
  void pushDense(SegmentData* s, const SegmentSpec& spec, absl::Span<const float> x,
                 float scale = 1.0f) const;
  // Makes *s the dense segment of spec holding coef * (grad + wd * w).
  void pushFolded(SegmentData* s, const SegmentSpec& spec, absl::Span<const float> grad,
                  absl::Span<const float> w, float wd, float coef);

  SegmentIndex index_;
  MethodOptions options_;
  std::shared_ptr<const VectorOps> ops_;

 private:
  size_t largest_ = 0;  // the largest segment's numel
  FloatArray g_;        // foldedGradient's
  std::vector<std::vector<FloatArray>*> arrays_;
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

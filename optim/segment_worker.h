#pragma once
// SegmentWorker: what every worker rule shares, so a method file holds only its update:
// the specs, the folded gradient g = grad + wd * w of one segment (as a buffer, or fused
// into the method's own update pass), applyReply (a dense reply segment is the model, a
// sparse one a delta: see method.h), and checkpoints of the state a method registers with
// keepState (per-segment arrays such as momentum u, error-feedback residuals, and what a
// compressor carries between steps, such as PowerSGD's Q), in optim/worker_state.h's
// layout. A rule refills the push message in place (one slot per spec, in spec order), so
// the vectors of the last step's push are reused.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compressors/error_feedback.h"
#include "optim/method.h"
#include "optim/segment_index.h"

namespace sparseps {

// The gradient with weight decay folded in, g + wd * w: what every worker rule steps with.
inline float foldWeightDecay(float g, float w, float wd) { return g + wd * w; }

class SegmentWorker : public WorkerRule {
 public:
  SegmentWorker(const SegmentSpecs& specs, const MethodOptions& options);
  // keepState holds pointers into the object: it stays where it was made.
  SegmentWorker(const SegmentWorker&) = delete;
  SegmentWorker& operator=(const SegmentWorker&) = delete;
  // Checks that grad and w cover every segment, gives the push one slot per spec (each
  // keeping its buffers from the last step), and has the method fill it (fillPush).
  void makePush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) final;
  void applyReply(const Message& reply, absl::Span<float> w) override;
  bool readsBorrowedDense() const override { return true; }  // applyReply: applyModelReply
  std::string saveState() const override;
  absl::Status loadState(const std::string& bytes) override;

 protected:
  // Registers state for checkpoints, in a fixed order (call from the constructor): one
  // array per spec, as zeroState made it; or an error-feedback memory, whose residuals
  // of the compressed segments are saved (zeros where none was made yet).
  void keepState(std::vector<std::vector<float>>* per_spec) { arrays_.push_back(per_spec); }
  void keepState(ErrorFeedback* memory) { memories_.push_back(memory); }
  // One sorted index list per spec (as the last push's indices).
  void keepState(std::vector<std::vector<uint32_t>>* per_spec) { index_lists_.push_back(per_spec); }
  // A compressor's own state of the compressed segments (Compressor::savedState).
  void keepState(Compressor* compressor) { compressors_.push_back(compressor); }
  // coef * (grad + wd * w) over `spec` with the step's wd (MethodOptions::weightDecayAt),
  // valid until the next call.
  absl::Span<const float> foldedGradient(const SegmentSpec& spec, absl::Span<const float> grad,
                                         absl::Span<const float> w, float wd, float coef = 1.0f);
  // Calls update(j, g_j) with g_j = grad + wd * w at element j of `spec`, for every j in
  // order: the fold fused into the method's own pass over its state.
  template <typename Update>
  void forEachFolded(const SegmentSpec& spec, absl::Span<const float> grad,
                     absl::Span<const float> w, float wd, Update&& update) const {
    const float* gr = grad.data() + spec.offset;
    const float* ww = w.data() + spec.offset;
    for (size_t j = 0; j < spec.numel; ++j) update(j, foldWeightDecay(gr[j], ww[j], wd));
  }
  // The method's update: fills slot i of the push for spec i.
  virtual void fillPush(absl::Span<const float> grad, absl::Span<const float> w,
                        const StepContext& ctx, Message* push) = 0;
  // One zero vector per spec (state such as u or v), or only for compressed specs.
  std::vector<std::vector<float>> zeroState(bool compressed_only) const;

  SegmentIndex index_;
  MethodOptions options_;

 private:
  std::vector<float> g_;  // sized once to the largest segment
  std::vector<std::vector<std::vector<float>>*> arrays_;
  std::vector<ErrorFeedback*> memories_;
  std::vector<std::vector<std::vector<uint32_t>>*> index_lists_;
  std::vector<Compressor*> compressors_;
};

}  // namespace sparseps

// gd: gradient dropping (Aji & Heafield, "Sparse Communication for Distributed Gradient
// Descent", EMNLP 2017), and with --compressor the error-feedback family around any
// compressor of compressors/registry.h (EF-signSGD, 1-bit SGD, EF-QSGD, PowerSGD, ...).
// No momentum. Per compressed segment, in docs/methods.md notation:
//   v = v + lr*g;  s = C(v);  push s;  v = v - s
// which is error feedback (compressors/error_feedback.h) around the compressor C, with
// x = lr*g and residual v. C is GdOptions.compressor, or top-k (exact or the sampled
// threshold, MethodOptions.selection); with f16 the selected values are rounded to half
// first, and v keeps the rounding. With error_feedback off the residual is dropped:
// push C(lr*g). Dense segments push lr*g dense. Server: W = W - decode(p); downlink dense
// W or dual-way sparse.

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/error_feedback.h"
#include "optim/descent_method.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"
#include "optim/selection.h"

namespace sparseps {
namespace {

class GdWorker : public SegmentWorker {
 public:
  GdWorker(const SegmentSpecs& specs, const MethodOptions& options,
           std::shared_ptr<const VectorOps> ops)
      : SegmentWorker(specs, options, std::move(ops)), v_(makeCompressor(options), ops_) {
    if (options.gd.error_feedback) {
      v_.layOut(specs);
      keepState(&v_);
    }
    keepState(&v_.inner());  // with or without error feedback (PowerSGD's Q)
  }

  void fillPush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    const float wd = options_.weightDecayAt(ctx.step);
    absl::Span<const SegmentSelect> segments = compressedSegments(push, options_.density, ctx.step);
    if (!options_.gd.error_feedback) {
      absl::Span<const float> lr_g = foldedGradients(grad, w, wd, ctx.lr);
      pushDense(push, lr_g, 1.0f, Specs::kDense);
      v_.inner().compressSegments(lr_g, segments);
      return;
    }
    pushFolded(push, grad, w, wd, ctx.lr, Specs::kDense);
    // v = v + lr*g, made in the pass that folds g, then s = C(v), v = v - s.
    ops_->accumulateSegments(v_.laidOut(), 1.0f, ctx.lr, grad, w, wd, segments);
    v_.compressAdded(segments);
  }

 private:
  ErrorFeedback v_;  // v per segment id (unused with error feedback off)
};

// The selectors run on a GPU's memory; the other compressors read host memory only.
class GdMethod : public DescentMethod<GdWorker> {
 public:
  GdMethod()
      : DescentMethod<GdWorker>("gd", RuleMemory::kHostAndDevice,
                                {"density", "selection", "compressor", "error_feedback"}) {}
  absl::Status checkDeviceRule(const MethodOptions& options) const override {
    if (options.gd.compressor.empty()) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("the worker rule of gd with the compressor ", options.gd.compressor,
                     " runs on host memory only (only the selections of --selection run on a "
                     "GPU's memory)"));
  }
};

}  // namespace

namespace builtin_methods {
std::unique_ptr<Method> gd() { return std::make_unique<GdMethod>(); }
}  // namespace builtin_methods

}  // namespace sparseps

// gd: gradient dropping (Aji & Heafield, "Sparse Communication for Distributed Gradient
// Descent", EMNLP 2017). No momentum. Per compressed segment, in docs/methods.md
// notation:
//   v = v + lr*g;  M = topk(v, r);  push v(.)M;  v = v(.)~M
// which is error feedback (compressors/error_feedback.h) around the selector, with
// x = lr*g and residual v. topk is exact or the sampled threshold (MethodOptions.selection);
// with f16 the selected values are rounded to half first, and v keeps the rounding.
// Dense segments push lr*g dense. Server: W = W - p; downlink dense W or dual-way sparse.

#include <memory>
#include <utility>

#include "compressors/error_feedback.h"
#include "optim/descent_method.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"
#include "optim/selection.h"

namespace sparseps {
namespace {

class GdWorker : public SegmentWorker {
 public:
  GdWorker(const SegmentSpecs& specs, const MethodOptions& options)
      : SegmentWorker(specs, options), v_(makeSelector(options.selection, options.f16)) {
    keepState(&v_);
  }

  void makePush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    checkSizes(grad, w);
    resizePush(push);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      absl::Span<const float> lr_g = foldedGradient(spec, grad, w, ctx.lr);
      if (!spec.compressed) {
        setDense(&(*push)[i], spec.id, lr_g);
        continue;
      }
      v_.compress(lr_g, options_.density, SelectContext{spec.id, ctx.step, options_.seed},
                  &(*push)[i]);
    }
  }

 private:
  ErrorFeedback v_;  // v per segment id
};

}  // namespace

std::unique_ptr<Method> makeGdMethod() { return std::make_unique<DescentMethod<GdWorker>>("gd"); }

}  // namespace sparseps

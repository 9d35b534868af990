// dgc: deep gradient compression (Lin et al., "Deep Gradient Compression: Reducing the
// Communication Bandwidth for Distributed Training", ICLR 2018). In docs/methods.md
// notation, per compressed segment:
//   (optional local clipping: g = g * min(1, thr / |g|), thr = clip_norm * N^(-1/2),
//    |g| the L2 norm of this worker's whole gradient, weight decay included)
//   u = m*u + g;  v = v + u                  (Nesterov: u = m*(u + g);  v = v + u + g)
//   M = topk(v, r);  push lr*v(.)M
//   momentum factor masking: v = v(.)~M;  u = u(.)~M
//   (with f16 the pushed lr*v(.)M is rounded to half and v keeps what the rounding took)
// v is error feedback (compressors/error_feedback.h) around the selector with x = u
// (Nesterov: x = u + g). r follows the warm-up schedule by epoch when warmup is on
// (DgcOptions::densityAt). topk is exact or the sampled threshold.
// Dense segments take plain momentum SGD: u = m*u + g, push lr*u (Nesterov:
// u = m*(u + g), push lr*(u + g)).
// Server: W = W - p; downlink dense W or dual-way sparse.

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compressors/error_feedback.h"
#include "compressors/half_rounding.h"
#include "optim/descent_method.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"
#include "optim/selection.h"

namespace sparseps {
namespace {

class DgcWorker : public SegmentWorker {
 public:
  DgcWorker(const SegmentSpecs& specs, const MethodOptions& options,
            std::shared_ptr<const VectorOps> ops)
      : SegmentWorker(specs, options, std::move(ops)),
        u_(zeroState()),
        v_(makeSelector(options.selection), ops_),
        x_(options.dgc.nesterov ? zeroState() : SpecVectors()) {
    v_.layOut(specs);
    keepState(&u_);
    keepState(&v_);
  }

  void fillPush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    const float m = static_cast<float>(options_.momentum);
    const float wd = options_.weightDecayAt(ctx.step);
    const float coef = clipCoefficient(grad, w, wd);
    const double density = options_.dgc.densityAt(ctx.epoch, options_.density);
    const size_t n = index_.extent();
    absl::Span<float> u = u_.all();
    // x = what enters the accumulation (v) or, for dense segments, the pushed direction.
    absl::Span<const float> x = u;
    if (options_.dgc.nesterov) {
      absl::Span<const float> g = foldedGradients(grad, w, wd, coef);
      ops_->combine(u, 1.0f, u, 1.0f, g);
      ops_->scale(u, m);
      ops_->combine(x_.all(), 1.0f, u, 1.0f, g);
      x = x_.all();
    } else {
      ops_->accumulate(u, m, coef, grad.subspan(0, n), w.subspan(0, n), wd);  // u = m*u + g
    }
    pushDense(push, x, ctx.lr, Specs::kDense);
    absl::Span<const SegmentSelect> segments = compressedSegments(push, density, ctx.step);
    v_.compressSegments(x, segments);
    ops_->fillAt(
        u, placedIndices([&](size_t i) { return absl::MakeConstSpan((*push)[i].indices); }), 0.0f);
    rounding_.resize(options_.f16 ? segments.size() : 0);
    for (size_t i = 0; i < segments.size(); ++i) {
      SegmentData& s = *segments[i].out;
      for (float& value : s.values) value *= ctx.lr;
      if (options_.f16) {
        // What travels is lr*v rounded to half: v keeps the rounding, in its own units.
        SegmentData& taken = rounding_[i];
        taken = s;
        roundValuesToHalf(&s);
        for (size_t t = 0; t < s.values.size(); ++t) {
          taken.values[t] = (taken.values[t] - s.values[t]) / ctx.lr;
        }
      }
    }
    v_.feedBack(rounding_, 1.0f);
  }

 private:
  // min(1, thr / |g|) with thr = clip_norm / sqrt(N); 1 when clipping is off.
  float clipCoefficient(absl::Span<const float> grad, absl::Span<const float> w, float wd) const {
    if (options_.dgc.clip_norm <= 0.0) return 1.0f;
    const size_t n = index_.extent();
    const double norm = std::sqrt(ops_->sumSquares(grad.subspan(0, n), w.subspan(0, n), wd));
    const double thr =
        options_.dgc.clip_norm / std::sqrt(static_cast<double>(options_.num_workers));
    return norm > thr ? static_cast<float>(thr / norm) : 1.0f;
  }

  SpecVectors u_;
  ErrorFeedback v_;       // v per segment id, laid out as u
  SpecVectors x_;         // Nesterov's u + g (without Nesterov, x is u)
  std::vector<SegmentData> rounding_;  // f16: what rounding took off each sent segment, per v
};

}  // namespace

namespace builtin_methods {
std::unique_ptr<Method> dgc() {
  return std::make_unique<DescentMethod<DgcWorker>>(
      "dgc", RuleMemory::kHostAndDevice,
      std::vector<std::string>{"momentum", "density", "selection", "nesterov", "clip_norm",
                               "dgc_warmup", "dgc_warmup_densities"});
}
}  // namespace builtin_methods

}  // namespace sparseps

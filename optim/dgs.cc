// dgs: dual-way gradient sparsification with SAMomentum (Yan et al., "Dual-Way Gradient
// Sparsification for Asynchronous Distributed Deep Learning", ICPP 2020). In
// ../shared/METHODS.md notation.
// Worker (SAMomentum), per compressed segment:
//   u = m*u;  u = u + lr*g;  M = topk(u, r * lr/lr0);  push u(.)M
//   u = u(.)M + (u(.)~M)/m
// (an unsent coordinate is divided by m, so the next m*u cancels the decay: each push of a
// coordinate is one momentum step whose gradient is the sum of the gradients since its
// last push). Dense segments: u = m*u + lr*g, push u dense, u kept (momentum SGD with the
// rate folded in; nothing is withheld, so nothing is divided by m).
// Worker, on a reply s_k: w = w + s_k (a dense reply after a resync: w = W_sync).
// Server (dual_way_downlink.h, always on for dgs): W = W - p; D = W - W_sync;
//   s_k = (D - A_k)(.)topk(D - A_k, r_server); reply s_k; A_k = A_k + s_k;
//   every R versions W_sync = W, and each worker's next reply is the dense W_sync, A_k = 0.
// Needs 0 < m < 1 (validate() says so): m = 0 would divide by zero.

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optim/descent_method.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"
#include "optim/selection.h"

namespace sparseps {
namespace {

class DgsWorker : public SegmentWorker {
 public:
  DgsWorker(const SegmentSpecs& specs, const MethodOptions& options)
      : SegmentWorker(specs, options),
        u_(zeroState(false)),
        selector_(makeSelector(options.selection)) {
    keepState(&u_);
  }

  void makePush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    checkSizes(grad, w);
    push->clear();
    const float m = static_cast<float>(options_.momentum);
    const float lr = ctx.lr;
    const double density = std::min(1.0, options_.density * lr / options_.lr0);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      absl::Span<const float> g = foldedGradient(spec, grad, w);
      std::vector<float>& u = u_[i];
      for (size_t j = 0; j < spec.numel; ++j) u[j] = m * u[j] + lr * g[j];
      if (!spec.compressed) {
        push->push_back(scaledDenseSegment(spec.id, u, 1.0f));
        continue;
      }
      SegmentData s;
      selector_->compress(u, density, SelectContext{spec.id, ctx.step, options_.seed}, &s);
      for (float& x : u) x /= m;
      for (size_t t = 0; t < s.indices.size(); ++t) u[s.indices[t]] = s.values[t];
      push->push_back(std::move(s));
    }
  }

 private:
  std::vector<std::vector<float>> u_;
  std::unique_ptr<Compressor> selector_;
};

class DgsMethod : public DescentMethod<DgsWorker> {
 public:
  DgsMethod() : DescentMethod<DgsWorker>("dgs") {}
  absl::Status validate(const MethodOptions& options) const override {
    if (absl::Status s = options.validate(); !s.ok()) return s;
    if (!(options.momentum > 0.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MethodOptions.momentum: dgs needs a momentum in (0, 1) (SAMomentum divides the "
          "unsent momentum by m), got ",
          options.momentum));
    }
    return absl::OkStatus();
  }

 protected:
  // Dual-way: the reply is always the sparse update of dual_way_downlink.h.
  Downlink downlink(const MethodOptions&) const override { return Downlink::kSparse; }
};

}  // namespace

std::unique_ptr<Method> makeDgsMethod() { return std::make_unique<DgsMethod>(); }

}  // namespace sparseps

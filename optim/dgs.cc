// dgs: dual-way gradient sparsification with SAMomentum (Yan et al., "Dual-Way Gradient
// Sparsification for Asynchronous Distributed Deep Learning", ICPP 2020). In
// docs/methods.md notation.
// Worker (SAMomentum), per compressed segment:
//   u = m*u;  u = u + lr*g;  M = topk(u, r * lr/lr0, or r with --density-rule=fixed);  push u(.)M
//   u = u(.)M + (u(.)~M)/m        (the division is deferred: see DgsWorker; with f16 the
//                                   sent u(.)M is the half-rounded value that travelled)
// (an unsent coordinate is divided by m, so the next m*u cancels the decay: each push of a
// coordinate is one momentum step whose gradient is the sum of the gradients since its
// last push). Dense segments: u = m*u + lr*g, push u dense, u kept (momentum SGD with the
// rate folded in; nothing is withheld, so nothing is divided by m).
// Worker, on a reply s_k: w = w + s_k (a dense reply after a resync: w = W_sync).
// Server (dual_way_downlink.h, dgs's default downlink): W = W - p; D = W - W_sync;
//   s_k = (D - A_k)(.)topk(D - A_k, r_server); reply s_k; A_k = A_k + s_k;
//   at every R-th push of the first worker W_sync = W, and each worker's next reply is the
//   dense W_sync, A_k = 0 (about every R * N versions with N workers).
// With --downlink=dense the server replies W and the worker sets w = W: the whole W - w_k,
// one-way sparsification (the reply of the DGS reference's published CIFAR-10 runs).
// Needs 0 < m < 1 (validate() says so): m = 0 would divide by zero.

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
  DgsWorker(const SegmentSpecs& specs, const MethodOptions& options,
            std::shared_ptr<const VectorOps> ops)
      : SegmentWorker(specs, options, std::move(ops)),
        u_(zeroState()),
        sent_(index_.size()),
        selector_(makeSelector(options.selection, options.f16)) {
    keepState(&u_);
    keepState(&sent_);
  }

  // u_ holds u with one difference, for speed: the division by m of the coordinates a push
  // did not send is left out, and the next step multiplies by m only the coordinates the
  // last push did send (m * (u/m) = u for the others). A step then makes one pass over u
  // instead of three (VectorOps::updateAndSelect: the momentum step and the top-k
  // together). The state is u_ and the last push's indices.
  void fillPush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    const float m = static_cast<float>(options_.momentum);
    const float lr = ctx.lr;
    const float wd = options_.weightDecayAt(ctx.step);
    // One update of the compressed segments, selected from as it is made. A dense segment
    // sends every coordinate, so all of its coordinates take the factor m: it is momentum
    // SGD with the rate folded in, u = m*u + lr*g.
    absl::Span<const SegmentSelect> segments =
        compressedSegments(push, options_.dgsDensityAt(lr), ctx.step);
    ops_->updateAndSelect(u_.all(), sentPositions(), m, 1.0f, lr, grad, w, wd, *selector_,
                          segments);
    ops_->accumulateSegments(u_.all(), m, lr, grad, w, wd, denseSegments());
    pushDense(push, u_.all(), 1.0f, Specs::kDense);
    for (size_t i = 0; i < index_.size(); ++i) {
      if (index_[i].compressed)
        sent_[i].assign((*push)[i].indices.begin(), (*push)[i].indices.end());
    }
    // The momentum of a sent coordinate goes on from what was sent: with f16, the rounded
    // value (without, the values are u's own). One write for the step, in offset order.
    if (options_.f16) {
      rounded_.clear();
      for (const SegmentSelect& s : segments) {
        rounded_.insert(rounded_.end(), s.out->values.begin(), s.out->values.end());
      }
      ops_->setAt(u_.all(), sentPositions(), rounded_);
    }
  }

 private:
  // Where in u the last push's compressed segments sent (a dense spec's list, empty unless
  // a checkpoint gave it one, is not read).
  absl::Span<const uint32_t> sentPositions() {
    return placedIndices([&](size_t i) {
      return index_[i].compressed ? absl::MakeConstSpan(sent_[i]) : absl::Span<const uint32_t>();
    });
  }

  SpecVectors u_;
  std::vector<std::vector<uint32_t>> sent_;   // per spec: the indices the last push sent
  std::vector<float> rounded_;                // f16: the step's sent values, in offset order
  std::unique_ptr<Compressor> selector_;
};

class DgsMethod : public DescentMethod<DgsWorker> {
 public:
  DgsMethod()
      : DescentMethod<DgsWorker>("dgs", RuleMemory::kHostAndDevice,
                                 {"momentum", "density", "density_rule", "selection"}) {}
  Downlink defaultDownlink() const override { return Downlink::kSparse; }

 protected:
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
};

}  // namespace

namespace builtin_methods {
std::unique_ptr<Method> dgs() { return std::make_unique<DgsMethod>(); }
}  // namespace builtin_methods

}  // namespace sparseps

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

// One SAMomentum step of one compressed segment, u = m*u at the coordinates the last push
// sent, then u = u + lr * (g + wd * w), stored into u as the selection reads it: the
// momentum update and the top-k are one pass over memory, and the sparse rescale touches
// each cache line while the pass has it.
class MomentumStep final : public StreamedVector {
 public:
  MomentumStep(float* u, const float* g, const float* w, size_t n, float lr, float wd,
               absl::Span<const uint32_t> sent, float m)
      : u_(u), g_(g), w_(w), n_(n), lr_(lr), wd_(wd), sent_(sent), m_(m) {}
  size_t size() const override { return n_; }
  const float* produce(size_t begin, size_t end) override {
    for (; next_sent_ < sent_.size() && sent_[next_sent_] < end; ++next_sent_) {
      u_[sent_[next_sent_]] *= m_;
    }
    for (size_t j = begin; j < end; ++j) u_[j] = step(u_[j], j);
    return u_ + begin;
  }
  void peek(size_t begin, size_t end, float* out) const override {
    for (size_t j = begin; j < end; ++j) out[j - begin] = step(u_[j], j);
    for (auto it = std::lower_bound(sent_.begin(), sent_.end(), begin);
         it != sent_.end() && *it < end; ++it) {
      out[*it - begin] = step(m_ * u_[*it], *it);
    }
  }
  absl::Span<const float> whole() override { return {u_, n_}; }

 private:
  float step(float u, size_t j) const { return u + lr_ * foldWeightDecay(g_[j], w_[j], wd_); }

  float* u_;
  const float* g_;
  const float* w_;
  size_t n_;
  float lr_, wd_;
  absl::Span<const uint32_t> sent_;  // increasing
  float m_;
  size_t next_sent_ = 0;
};

class DgsWorker : public SegmentWorker {
 public:
  DgsWorker(const SegmentSpecs& specs, const MethodOptions& options)
      : SegmentWorker(specs, options),
        u_(zeroState(false)),
        sent_(index_.size()),
        selector_(makeSelector(options.selection, options.f16)) {
    keepState(&u_);
    keepState(&sent_);
  }

  // u_ holds u with one difference, for speed: the division by m of the coordinates a push
  // did not send is left out, and the next step multiplies by m only the coordinates the
  // last push did send (m * (u/m) = u for the others). A step then makes one pass over u
  // instead of three. The state is u_ and the last push's indices.
  void fillPush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    const float m = static_cast<float>(options_.momentum);
    const float lr = ctx.lr;
    const double density = options_.dgsDensityAt(lr);
    const float wd = options_.weightDecayAt(ctx.step);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      float* u = u_[i].data();
      SegmentData& s = (*push)[i];
      if (!spec.compressed) {  // momentum SGD with the rate folded in
        forEachFolded(spec, grad, w, wd,
                      [u, m, lr](size_t j, float g) { u[j] = m * u[j] + lr * g; });
        setDense(&s, spec.id, u_[i]);
        continue;
      }
      MomentumStep step(u, grad.data() + spec.offset, w.data() + spec.offset, spec.numel, lr, wd,
                        sent_[i], m);
      selector_->compressStreamed(step, density,
                                  SelectContext{spec.id, ctx.step, options_.seed}, &s);
      sent_[i].assign(s.indices.begin(), s.indices.end());
      // The momentum of a sent coordinate goes on from what was sent: with f16, the
      // rounded value (without, the values are u's own).
      if (options_.f16) {
        for (size_t t = 0; t < s.indices.size(); ++t) u[s.indices[t]] = s.values[t];
      }
    }
  }

 private:
  std::vector<std::vector<float>> u_;
  std::vector<std::vector<uint32_t>> sent_;  // per spec: the indices the last push sent
  std::unique_ptr<Compressor> selector_;
};

class DgsMethod : public DescentMethod<DgsWorker> {
 public:
  DgsMethod() : DescentMethod<DgsWorker>("dgs") {}
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

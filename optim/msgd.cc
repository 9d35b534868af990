// msgd: momentum SGD, the single-node baseline (Polyak's heavy ball as in torch.optim.SGD;
// the local reference of docs/methods.md). Update, every segment:
//   u = m*u + g;  w = w - lr*u
// As a parameter-server method (world size 1 or more): the worker pushes p = lr*u dense,
// the server applies W = W - p and replies with the dense W (or, as an option, with the
// dual-way sparse downlink). With one worker this is exactly local momentum SGD.

#include <memory>
#include <vector>

#include "optim/descent_method.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"

namespace sparseps {
namespace {

class MsgdWorker : public SegmentWorker {
 public:
  MsgdWorker(const SegmentSpecs& specs, const MethodOptions& options)
      : SegmentWorker(specs, options), u_(zeroState(false)) {
    keepState(&u_);
  }

  void fillPush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    const float m = static_cast<float>(options_.momentum);
    const float lr = ctx.lr;
    const float wd = options_.weightDecayAt(ctx.step);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      float* u = u_[i].data();
      float* p = denseValues(&(*push)[i], spec.id, spec.numel).data();
      forEachFolded(spec, grad, w, wd, [u, p, m, lr](size_t j, float g) {
        u[j] = m * u[j] + g;
        p[j] = lr * u[j];
      });
    }
  }

 private:
  std::vector<std::vector<float>> u_;
};

}  // namespace

namespace builtin_methods {
std::unique_ptr<Method> msgd() {
  return std::make_unique<DescentMethod<MsgdWorker>>("msgd");
}
}  // namespace builtin_methods

}  // namespace sparseps

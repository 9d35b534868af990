// msgd: momentum SGD, the single-node baseline (Polyak's heavy ball as in torch.optim.SGD;
// the local reference of ../shared/METHODS.md). Update, every segment:
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

  void makePush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    checkSizes(grad, w);
    push->clear();
    const float m = static_cast<float>(options_.momentum);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      absl::Span<const float> g = foldedGradient(spec, grad, w);
      std::vector<float>& u = u_[i];
      for (size_t j = 0; j < spec.numel; ++j) u[j] = m * u[j] + g[j];
      push->push_back(scaledDenseSegment(spec.id, u, ctx.lr));
    }
  }

 private:
  std::vector<std::vector<float>> u_;
};

}  // namespace

std::unique_ptr<Method> makeMsgdMethod() {
  return std::make_unique<DescentMethod<MsgdWorker>>("msgd");
}

}  // namespace sparseps

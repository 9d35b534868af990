// msgd: momentum SGD, the single-node baseline (Polyak's heavy ball as in torch.optim.SGD;
// the local reference of docs/methods.md). Update, every segment:
//   u = m*u + g;  w = w - lr*u
// As a parameter-server method (world size 1 or more): the worker pushes p = lr*u dense,
// the server applies W = W - p and replies with the dense W (or, as an option, with the
// dual-way sparse downlink). With one worker this is exactly local momentum SGD.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "optim/descent_method.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"

namespace sparseps {
namespace {

class MsgdWorker : public SegmentWorker {
 public:
  MsgdWorker(const SegmentSpecs& specs, const MethodOptions& options,
             std::shared_ptr<const VectorOps> ops)
      : SegmentWorker(specs, options, std::move(ops)), u_(zeroState()) {
    keepState(&u_);
  }

  void fillPush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    const float m = static_cast<float>(options_.momentum);
    const float wd = options_.weightDecayAt(ctx.step);
    const size_t n = index_.extent();
    ops_->accumulate(u_.all(), m, 1.0f, grad.subspan(0, n), w.subspan(0, n), wd);
    pushDense(push, u_.all(), ctx.lr, Specs::kAll);
  }

 private:
  SpecVectors u_;
};

}  // namespace

namespace builtin_methods {
std::unique_ptr<Method> msgd() {
  return std::make_unique<DescentMethod<MsgdWorker>>("msgd", RuleMemory::kHostAndDevice,
                                                std::vector<std::string>{"momentum"});
}
}  // namespace builtin_methods

}  // namespace sparseps

// asgd: asynchronous SGD (the parameter-server baseline of the DGS paper, Yan et al.,
// ICPP 2020; Dean et al., "Large Scale Distributed Deep Networks", NIPS 2012).
//   Worker: push p = lr*g, dense (every segment).
//   Server: W = W - p; reply with the dense W, or the dual-way sparse downlink (option).

#include <memory>

#include "optim/descent_method.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"

namespace sparseps {
namespace {

class AsgdWorker : public SegmentWorker {
 public:
  using SegmentWorker::SegmentWorker;

  void fillPush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    pushFolded(push, grad, w, options_.weightDecayAt(ctx.step), ctx.lr, Specs::kAll);
  }
};

}  // namespace

namespace builtin_methods {
std::unique_ptr<Method> asgd() {
  return std::make_unique<DescentMethod<AsgdWorker>>("asgd", RuleMemory::kHostAndDevice);
}
}  // namespace builtin_methods

}  // namespace sparseps

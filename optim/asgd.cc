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
    const float wd = options_.weightDecayAt(ctx.step);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      pushFolded(&(*push)[i], spec, grad, w, wd, ctx.lr);
    }
  }
};

}  // namespace

namespace builtin_methods {
std::unique_ptr<Method> asgd() {
  return std::make_unique<DescentMethod<AsgdWorker>>("asgd", RuleMemory::kHostAndDevice);
}
}  // namespace builtin_methods

}  // namespace sparseps

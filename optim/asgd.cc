// asgd: asynchronous SGD (the parameter-server baseline of the DGS paper, Yan et al.,
// ICPP 2020; Dean et al., "Large Scale Distributed Deep Networks", NIPS 2012).
//   Worker: push p = lr*g, dense (every segment).
//   Server: W = W - p; reply with the dense W, or the dual-way sparse downlink (option).

#include <memory>

#include "optim/descent_server.h"
#include "optim/fatal.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"

namespace sparseps {
namespace {

class AsgdWorker : public SegmentWorker {
 public:
  using SegmentWorker::SegmentWorker;

  void makePush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    checkSizes(grad, w);
    push->clear();
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      push->push_back(scaledDenseSegment(spec.id, foldedGradient(spec, grad, w), ctx.lr));
    }
  }
};

class AsgdMethod : public Method {
 public:
  std::string name() const override { return "asgd"; }
  std::unique_ptr<WorkerRule> makeWorker(const SegmentSpecs& specs,
                                         const MethodOptions& options) const override {
    requireOk(validate(options));
    return std::make_unique<AsgdWorker>(specs, options);
  }
  std::unique_ptr<ServerRule> makeServer(const SegmentSpecs& specs, int num_workers,
                                         const MethodOptions& options) const override {
    requireOk(validate(options));
    return makeDescentServer(specs, num_workers, options, options.downlink);
  }
};

}  // namespace

std::unique_ptr<Method> makeAsgdMethod() { return std::make_unique<AsgdMethod>(); }

}  // namespace sparseps

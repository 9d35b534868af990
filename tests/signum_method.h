#pragma once
// A method of one's own, for the tests that add one to the process's registry: signum
// (Bernstein et al., "signSGD: Compressed Optimisation for Non-Convex Problems", ICML 2018):
//   u = m*u + g;  push lr * sign(u), dense.
// Its rule reads the vectors itself (host memory), so GPU workers refuse it; it reads the
// momentum option besides those every method reads. One line adds it:
// `registry.add(makeSignum())`.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "optim/descent_method.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"

namespace sparseps::testing {

class SignumWorker : public SegmentWorker {
 public:
  SignumWorker(const SegmentSpecs& specs, const MethodOptions& options,
               std::shared_ptr<const VectorOps> ops)
      : SegmentWorker(specs, options, std::move(ops)), u_(zeroState()) {
    keepState(&u_);
  }

  void fillPush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    const float m = static_cast<float>(options_.momentum);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      absl::Span<const float> g = foldedGradient(spec, grad, w, options_.weightDecayAt(ctx.step));
      float* u = u_[i].data();
      absl::Span<float> p = denseValues(&(*push)[i], spec.id, spec.numel);
      for (size_t j = 0; j < spec.numel; ++j) {
        u[j] = m * u[j] + g[j];
        p[j] = u[j] > 0 ? ctx.lr : (u[j] < 0 ? -ctx.lr : 0.0f);
      }
    }
  }

 private:
  SpecVectors u_;
};

inline std::unique_ptr<Method> makeSignum() {
  return std::make_unique<DescentMethod<SignumWorker>>("signum", RuleMemory::kHost,
                                                       std::vector<std::string>{"momentum"});
}

}  // namespace sparseps::testing

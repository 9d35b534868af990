// A method of one's own: this file writes it (signSGD, Bernstein et al., ICML 2018: push
// lr * sign(g), dense) and one line registers it (`methods.add`, below); the runtime then
// runs it as it runs the built-ins. Checked against the update written out by hand.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/virtual/virtual_job.h"
#include "optim/builtin_methods.h"
#include "optim/descent_method.h"
#include "optim/message_ops.h"
#include "optim/segment_worker.h"
#include "tests/core/quadratic_job.h"

namespace sparseps {
namespace {

class SignWorker : public SegmentWorker {
 public:
  using SegmentWorker::SegmentWorker;
  void fillPush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) override {
    const float wd = options_.weightDecayAt(ctx.step);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      absl::Span<const float> g = foldedGradient(spec, grad, w, wd);
      absl::Span<float> p = denseValues(&(*push)[i], spec.id, spec.numel);
      for (size_t j = 0; j < spec.numel; ++j) {
        p[j] = g[j] > 0 ? ctx.lr : (g[j] < 0 ? -ctx.lr : 0.0f);
      }
    }
  }
};

constexpr int kSteps = 20;
constexpr float kLr = 0.01f;

TEST(OwnMethod, OneFileAndOneRegistrationLineRunInTheRuntime) {
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  ASSERT_TRUE(
      methods.add(std::make_unique<DescentMethod<SignWorker>>("signsgd", RuleMemory::kHost)).ok());

  std::vector<float> server;
  VirtualJobOptions o = testing::quadraticJob("signsgd", kLr, &server);
  testing::Quadratic workload(kSteps);
  auto result = runVirtualJob(o, methods, workload);
  ASSERT_TRUE(result.ok()) << result.status();

  // By hand: each step moves every coordinate by lr towards 1, and a coordinate at 1 not at all.
  std::vector<float> w = o.initial_params;
  for (int t = 0; t < kSteps; ++t) {
    for (float& x : w) {
      const float g = x - 1.0f;
      x -= g > 0 ? kLr : (g < 0 ? -kLr : 0.0f);
    }
  }
  ASSERT_EQ(server.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_FLOAT_EQ(server[i], w[i]) << i;
  EXPECT_EQ(result->steps, static_cast<uint64_t>(kSteps));
}

}  // namespace
}  // namespace sparseps

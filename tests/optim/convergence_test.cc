// Every method, as a whole (worker rules + server rule, several asynchronous workers,
// both downlinks), minimizes a quadratic f(w) = 0.5 |w - w*|^2: the rules compose into an
// optimizer, beyond matching the references step by step.

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "optim/builtin_methods.h"
#include "optim/method_registry.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

double distance(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t j = 0; j < a.size(); ++j) sum += (a[j] - b[j]) * double{a[j] - b[j]};
  return std::sqrt(sum);
}

TEST(ConvergenceTest, EveryMethodMinimizesAQuadratic) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  const SegmentSpecs specs = mixedSpecs();
  const size_t n = extent(specs);
  constexpr int kWorkers = 4;
  for (const std::string& name : registry.names()) {
    for (Downlink downlink : {Downlink::kDense, Downlink::kSparse}) {
      SCOPED_TRACE(name + (downlink == Downlink::kSparse ? " sparse downlink" : " dense downlink"));
      std::mt19937_64 rng(seed);
      const std::vector<float> target = randomVector(rng, n);
      MethodOptions o;
      o.setLr0(0.02)
          .setMomentum(0.5)
          .setWeightDecay(0.0)
          .setDensity(0.1)
          .setServerDensity(0.2)
          .setDownlink(downlink)
          .setResyncEvery(50)
          .setNumWorkers(kWorkers);
      const Method& method = **registry.find(name);
      const CheckedOptions checked = method.check(o).value();
      auto server = method.makeServer(specs, checked);
      std::vector<std::unique_ptr<WorkerRule>> workers;
      for (int k = 0; k < kWorkers; ++k) workers.push_back(method.makeWorker(specs, checked));
      std::vector<float> W(n, 0.0f);
      std::vector<std::vector<float>> w(kWorkers, W);
      const double start = distance(W, target);
      StepContext ctx;
      ctx.lr = 0.02f;
      for (int t = 0; t < 1500; ++t) {
        const int k = t % kWorkers;
        std::vector<float> grad(n);
        for (size_t j = 0; j < n; ++j) grad[j] = w[k][j] - target[j];
        Message push, reply;
        workers[k]->makePush(grad, w[k], ctx, &push);
        server->applyPush(k, push, 1.0f, absl::MakeSpan(W));
        server->makeReply(k, W, &reply);
        workers[k]->applyReply(reply, absl::MakeSpan(w[k]));
        ctx.step += k == kWorkers - 1 ? 1 : 0;
      }
      EXPECT_LT(distance(W, target), 1e-2 * start);
    }
  }
}

}  // namespace
}  // namespace sparseps::test

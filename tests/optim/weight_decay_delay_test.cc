// --weight-decay-delay: a worker's first D steps fold no weight decay (the DGS reference's
// workers), later ones fold it as always. For every method, a push at a step below D must
// equal the push of a worker without weight decay, and one at D the push of a worker with it.

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "optim/builtin_methods.h"
#include "optim/method_registry.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

// The push of a fresh worker of `method` at step `step`.
Message pushAt(const Method& method, const SegmentSpecs& specs, const MethodOptions& o,
               const std::vector<float>& grad, const std::vector<float>& w, uint64_t step) {
  auto worker = method.makeWorker(specs, method.check(o).value());
  StepContext ctx;
  ctx.lr = 0.1f;
  ctx.step = step;
  Message push;
  worker->makePush(grad, w, ctx, &push);
  return push;
}

void expectSamePush(const Message& got, const Message& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].indices, want[i].indices) << what << ", segment " << i;
    expectVectorsNear(got[i].values, want[i].values, what, 0.0f);
  }
}

TEST(WeightDecayDelayTest, NoDecayDuringTheDelayThenTheUsualDecay) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  const SegmentSpecs specs = mixedSpecs();
  const size_t n = extent(specs);
  const std::vector<float> grad = randomVector(rng, n), w = randomVector(rng, n, 10.0f);
  constexpr int kDelay = 3;
  for (const std::string& name : registry.names()) {
    SCOPED_TRACE(name);
    const Method& method = **registry.find(name);
    MethodOptions base;
    base.setMomentum(0.5).setDensity(0.1);
    MethodOptions delayed = base, without = base;
    delayed.setWeightDecay(0.05).setWeightDecayDelay(kDelay);
    without.setWeightDecay(0.0);
    MethodOptions with = delayed;
    with.setWeightDecayDelay(0);
    for (uint64_t step : {uint64_t{0}, uint64_t{kDelay - 1}}) {
      expectSamePush(pushAt(method, specs, delayed, grad, w, step),
                     pushAt(method, specs, without, grad, w, step), "inside the delay");
    }
    const Message after = pushAt(method, specs, delayed, grad, w, kDelay);
    expectSamePush(after, pushAt(method, specs, with, grad, w, kDelay), "after the delay");
    // The decay does reach that push: |w| is 10x |grad|, so 0.05 * w changes it.
    const Message undecayed = pushAt(method, specs, without, grad, w, kDelay);
    bool differs = false;
    for (size_t i = 0; i < after.size(); ++i) differs |= after[i].values != undecayed[i].values;
    EXPECT_TRUE(differs);
  }
}

TEST(WeightDecayDelayTest, ANegativeDelayIsRefusedByName) {
  const absl::Status s = MethodOptions().setWeightDecayDelay(-1).validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("MethodOptions.weight_decay_delay"), std::string::npos) << s;
}

}  // namespace
}  // namespace sparseps::test

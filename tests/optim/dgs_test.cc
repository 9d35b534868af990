// DGS-specific behaviour: SAMomentum's delayed momentum step, the resync of the dual-way
// downlink, the first dense reply, and the momentum constraint.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "optim/builtin_methods.h"
#include "optim/method_registry.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

// Every test gets a fresh seed, named in its failure messages, and the built-in methods.
class DgsTest : public ::testing::Test {
 protected:
  DgsTest() { EXPECT_TRUE(registerBuiltinMethods(registry_).ok()); }
  const Method& dgs() { return **registry_.find("dgs"); }
  CheckedOptions dgsChecked(const MethodOptions& o) { return dgs().check(o).value(); }

  const uint64_t seed_ = freshSeed();
  const ::testing::ScopedTrace trace_{__FILE__, __LINE__, "seed=" + std::to_string(seed_)};
  std::mt19937_64 rng_{seed_};
  MethodRegistry registry_;
};

float valueAt(const SegmentData& s, uint32_t index) {
  for (size_t t = 0; t < s.indices.size(); ++t) {
    if (s.indices[t] == index) return s.values[t];
  }
  return 0.0f;
}

bool sends(const SegmentData& s, uint32_t index) {
  for (uint32_t i : s.indices) {
    if (i == index) return true;
  }
  return false;
}

// A coordinate left out for several steps is pushed as one momentum step whose gradient is
// the sum of the gradients since its last push: u = m*a + lr * (g_2 + ... + g_5).
TEST_F(DgsTest, SkippedCoordinateCarriesTheSumOfItsGradients) {
  std::uniform_real_distribution<float> small(0.001f, 0.01f);
  const SegmentSpecs specs = {SegmentSpec{0, 0, 10, true}};
  const float m = 0.7f, lr = 0.1f;
  MethodOptions o;
  o.setMomentum(m).setWeightDecay(0.0).setDensity(0.1).setLr0(lr);  // k = 1
  auto worker = dgs().makeWorker(specs, dgsChecked(o));
  std::vector<float> w(10, 0.0f);
  StepContext ctx;
  ctx.lr = lr;

  // Step 1: coordinate 0 wins and is pushed with a = lr * g_1.
  std::vector<float> grad(10, 0.0f);
  grad[0] = 5.0f;
  Message push;
  worker->makePush(grad, w, ctx, &push);
  ASSERT_TRUE(sends(push[0], 0));
  const float a = valueAt(push[0], 0);
  EXPECT_FLOAT_EQ(a, lr * 5.0f);

  // Steps 2-4: coordinate 0 gets small gradients; a new coordinate wins each time.
  float sum = 0.0f;
  for (uint32_t t = 1; t <= 3; ++t) {
    std::fill(grad.begin(), grad.end(), 0.0f);
    grad[0] = small(rng_);
    sum += grad[0];
    grad[t] = 100.0f * std::pow(10.0f, static_cast<float>(t));
    ctx.step = t;
    worker->makePush(grad, w, ctx, &push);
    ASSERT_FALSE(sends(push[0], 0)) << "step " << t;
    ASSERT_TRUE(sends(push[0], t)) << "step " << t;
  }
  // Step 5: coordinate 0 is pushed again: one momentum step over the summed gradients.
  std::fill(grad.begin(), grad.end(), 0.0f);
  grad[0] = 1e6f;
  sum += grad[0];
  ctx.step = 4;
  worker->makePush(grad, w, ctx, &push);
  ASSERT_TRUE(sends(push[0], 0));
  const float want = m * a + lr * sum;
  EXPECT_NEAR(valueAt(push[0], 0), want, 1e-5f * std::fabs(want));
}

// At every R-th push of the first worker W_sync = W; each worker's next reply is the dense
// W_sync and its residual restarts, after which sparse replies resume. The first reply is
// dense too.
TEST_F(DgsTest, ResyncSendsDenseWSyncOncePerWorker) {
  const SegmentSpecs specs = mixedSpecs();
  const size_t n = extent(specs);
  constexpr int kWorkers = 2;
  constexpr int kResync = 4;
  MethodOptions o;
  o.setResyncEvery(kResync).setDensity(0.1).setServerDensity(0.1).setNumWorkers(kWorkers);
  auto server = dgs().makeServer(specs, dgsChecked(o));  // downlink auto: dual-way
  auto worker = dgs().makeWorker(specs, dgsChecked(o));
  std::vector<float> W = randomVector(rng_, n);
  std::vector<float> snapshot;  // W when the last resync was taken
  std::vector<int> dense_replies(kWorkers, 0);
  // Pushes alternate 0, 1, 0, 1, ... so worker 0 makes versions 1, 3, 5, ...: its c-th
  // push is version 2c - 1, and its pushes R, 2R, 3R (versions 7, 15, 23 for R = 4)
  // resync: W_sync = W after that push, that reply and the other worker's next are dense.
  // About every R * N versions, not every R.
  std::vector<int> resync_versions;
  for (int c = kResync; 2 * c - 1 <= 3 * kResync * kWorkers + 1; c += kResync) {
    resync_versions.push_back(2 * c - 1);
  }
  ASSERT_EQ(resync_versions, (std::vector<int>{7, 15, 23}));
  for (int version = 1; version <= 3 * kResync * kWorkers + 1; ++version) {
    const int k = (version - 1) % kWorkers;
    Message push;
    worker->makePush(randomVector(rng_, n), W, StepContext{}, &push);
    server->applyPush(k, push, 1.0f, absl::MakeSpan(W));
    Message reply;
    server->makeReply(k, W, &reply);
    const bool resync = std::count(resync_versions.begin(), resync_versions.end(), version) > 0;
    if (version == 1 || resync) snapshot = W;
    bool all_dense = true, any_dense = false;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (!specs[i].compressed) {
        ASSERT_TRUE(reply[i].dense);
        continue;
      }
      all_dense = all_dense && reply[i].dense;
      any_dense = any_dense || reply[i].dense;
      if (reply[i].dense) {
        const SegmentSpec& s = specs[i];
        std::vector<float> want(snapshot.begin() + s.offset, snapshot.begin() + s.offset + s.numel);
        expectVectorsNear(reply[i].values, want, "dense reply = W_sync", 0.0f);
      }
    }
    ASSERT_EQ(all_dense, any_dense) << "version " << version;
    const bool after_resync =
        std::count(resync_versions.begin(), resync_versions.end(), version - 1) > 0;
    const bool want_dense = version <= kWorkers || resync || after_resync;
    EXPECT_EQ(all_dense, want_dense) << "version " << version;
    dense_replies[k] += all_dense ? 1 : 0;
  }
  EXPECT_EQ(dense_replies[0] + dense_replies[1], 2 + 2 * 3);
}

// --density-rule: lr scales the density with the rate (r * lr / lr0), fixed keeps r.
TEST_F(DgsTest, DensityRuleFixedKeepsTheDensityWhenTheRateFalls) {
  const SegmentSpecs specs = {SegmentSpec{0, 0, 1000, true}};
  const std::vector<float> grad = randomVector(rng_, 1000), w(1000, 0.0f);
  StepContext ctx;
  ctx.lr = 0.01f;  // a tenth of lr0
  for (const auto& [rule, want] : {std::pair{DensityRule::kFollowsLr, size_t{1}},
                                   std::pair{DensityRule::kFixed, size_t{10}}}) {
    MethodOptions o;
    o.setLr0(0.1).setDensity(0.01).setDensityRule(rule);
    auto worker = dgs().makeWorker(specs, dgsChecked(o));
    Message push;
    worker->makePush(grad, w, ctx, &push);
    EXPECT_EQ(push[0].indices.size(), want) << nameOf(kDensityRuleNames, rule);
  }
}

// --downlink=dense makes dgs one-way: every reply is the server's whole model, and the
// worker's model becomes it (w + (W - w_k) in the reference's arithmetic).
TEST_F(DgsTest, DenseDownlinkRepliesTheWholeModel) {
  const SegmentSpecs specs = mixedSpecs();
  const size_t n = extent(specs);
  MethodOptions o;
  o.setDensity(0.1).setDownlink(Downlink::kDense).setNumWorkers(2);
  EXPECT_EQ(dgs().downlink(o), Downlink::kDense);
  auto server = dgs().makeServer(specs, dgsChecked(o));
  auto worker = dgs().makeWorker(specs, dgsChecked(o));
  std::vector<float> W = randomVector(rng_, n), w = W;
  for (int version = 1; version <= 6; ++version) {
    Message push;
    worker->makePush(randomVector(rng_, n), w, StepContext{}, &push);
    server->applyPush(version % 2, push, 1.0f, absl::MakeSpan(W));
    Message reply;
    server->makeReply(version % 2, W, &reply);
    for (size_t i = 0; i < specs.size(); ++i) ASSERT_TRUE(reply[i].dense) << "segment " << i;
    worker->applyReply(reply, absl::MakeSpan(w));
    expectVectorsNear(w, W, "w = W after a dense reply", 0.0f);
  }
}

TEST_F(DgsTest, MomentumMustBeInOpenUnitInterval) {
  const Method& method = dgs();
  MethodOptions o;
  o.setMomentum(0.0);
  absl::Status s = method.check(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("MethodOptions.momentum"), std::string::npos) << s;
  EXPECT_NE(s.message().find("dgs"), std::string::npos) << s;
  EXPECT_FALSE(method.check(MethodOptions().setMomentum(1.0)).ok());
  EXPECT_TRUE(method.check(MethodOptions().setMomentum(0.3)).ok());
  // Other methods accept m = 0 (plain SGD).
  EXPECT_TRUE((*registry_.find("dgc"))->check(o).ok());
}

// Options another method accepted are not dgs's: its rules refuse them loudly.
TEST_F(DgsTest, RulesTakeOnlyOptionsTheirMethodChecked) {
  const Method& method = dgs();
  const CheckedOptions dgc_checked =
      (*registry_.find("dgc"))->check(MethodOptions().setMomentum(0.0)).value();
  EXPECT_DEATH(method.makeWorker(mixedSpecs(), dgc_checked), "checked by dgc given to dgs");
  EXPECT_DEATH(method.makeServer(mixedSpecs(), dgc_checked), "checked by dgc given to dgs");
}

}  // namespace
}  // namespace sparseps::test

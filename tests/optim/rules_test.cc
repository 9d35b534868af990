// Every method's worker and server rules against the plain references of reference.h,
// step by step: several workers in one process, mixed dense and compressed segments,
// random gradients, a learning-rate drop, both downlinks and both selections.

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "optim/builtin_methods.h"
#include "optim/method_registry.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

struct Config {
  std::string method;
  Downlink downlink = Downlink::kDense;
  Selection selection = Selection::kExact;
  bool nesterov = false;
  double clip_norm = 0.0;
  bool warmup = false;
  DensityRule density_rule = DensityRule::kFollowsLr;
  int weight_decay_delay = 0;
};

std::string configName(const Config& c) {
  std::string name = c.method;
  name += c.downlink == Downlink::kSparse ? "_sparsedown" : "_densedown";
  name += c.selection == Selection::kSampled ? "_sampled" : "_exact";
  if (c.nesterov) name += "_nesterov";
  if (c.clip_norm > 0) name += "_clip";
  if (c.warmup) name += "_warmup";
  if (c.density_rule == DensityRule::kFixed) name += "_fixeddensity";
  if (c.weight_decay_delay > 0) name += "_wddelay";
  return name;
}

std::string testName(const ::testing::TestParamInfo<Config>& info) {
  return configName(info.param);
}

void PrintTo(const Config& c, std::ostream* os) { *os << configName(c); }

class RulesTest : public ::testing::TestWithParam<Config> {};

TEST_P(RulesTest, MatchesReferenceStepByStep) {
  const Config& c = GetParam();
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);

  constexpr int kWorkers = 3;
  constexpr int kSteps = 40;
  const SegmentSpecs specs = mixedSpecs();
  const size_t n = extent(specs);
  MethodOptions o;
  o.setLr0(0.1)
      .setMomentum(0.8)
      .setWeightDecay(0.01)
      .setWeightDecayDelay(c.weight_decay_delay)
      .setDensity(0.1)
      .setDensityRule(c.density_rule)
      .setServerDensity(0.2)
      .setDownlink(c.downlink)
      .setSelection(c.selection)
      .setResyncEvery(7)
      .setNumWorkers(kWorkers)
      .setDgc(DgcOptions()
                  .setNesterov(c.nesterov)
                  .setClipNorm(c.clip_norm)
                  .setWarmup(c.warmup)
                  .setWarmupDensities({0.5, 0.25, 0.125}))
      .setSeed(seed);

  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  auto method = registry.find(c.method);
  ASSERT_TRUE(method.ok()) << method.status();
  absl::StatusOr<CheckedOptions> checked = (*method)->check(o);
  ASSERT_TRUE(checked.ok()) << checked.status();
  const bool dual_way = c.downlink == Downlink::kSparse;

  std::unique_ptr<ServerRule> server = (*method)->makeServer(specs, *checked);
  RefServer ref_server(specs, kWorkers, o, dual_way);
  std::vector<std::unique_ptr<WorkerRule>> workers;
  std::vector<RefWorker> ref_workers;
  std::vector<float> W = randomVector(rng, n);
  std::vector<float> ref_W = W;
  std::vector<std::vector<float>> w(kWorkers, W), ref_w(kWorkers, W);
  std::vector<uint64_t> steps(kWorkers, 0);
  for (int k = 0; k < kWorkers; ++k) {
    workers.push_back((*method)->makeWorker(specs, *checked));
    ref_workers.emplace_back(c.method, specs, o);
  }

  for (int t = 0; t < kSteps; ++t) {
    const int k = static_cast<int>(rng() % kWorkers);
    const std::string at = "step " + std::to_string(t) + " worker " + std::to_string(k);
    std::vector<float> grad = randomVector(rng, n, c.clip_norm > 0 ? 3.0f : 1.0f);
    StepContext ctx;
    ctx.lr = t < kSteps / 2 ? 0.1f : 0.05f;  // a drop: DGS's density follows lr / lr0
    ctx.epoch = t / 8;
    ctx.step = steps[k]++;

    Message push;
    workers[k]->makePush(grad, w[k], ctx, &push);
    Message ref_push = ref_workers[k].push(grad, ref_w[k], ctx, push);
    expectMessagesNear(push, ref_push, "push at " + at);

    server->applyPush(k, push, 1.0f, absl::MakeSpan(W));
    ref_server.apply(k, ref_push, 1.0f, ref_W);
    expectVectorsNear(W, ref_W, "W at " + at);

    Message reply;
    server->makeReply(k, W, &reply);
    Message ref_reply = ref_server.reply(k, ref_W, reply);
    expectMessagesNear(reply, ref_reply, "reply at " + at);

    workers[k]->applyReply(reply, absl::MakeSpan(w[k]));
    refApplyReply(specs, ref_reply, ref_w[k]);
    expectVectorsNear(w[k], ref_w[k], "w after reply at " + at);
    for (size_t i = 0; i < specs.size(); ++i) {
      const SegmentSpec& s = specs[i];
      std::vector<float> wk(w[k].begin() + s.offset, w[k].begin() + s.offset + s.numel);
      std::vector<float> Wk(W.begin() + s.offset, W.begin() + s.offset + s.numel);
      if (dual_way && s.compressed) {
        // The DGS invariant: w_k = W_sync + A_k after every reply.
        expectVectorsNear(wk, ref_server.tracked(k, i), "w_k = W_sync + A_k at " + at, 1e-4f);
      } else {
        expectVectorsNear(wk, Wk, "w_k = W at " + at, 0.0f);
      }
    }
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Methods, RulesTest,
    ::testing::Values(Config{"msgd"}, Config{"msgd", Downlink::kSparse}, Config{"asgd"},
                      Config{"asgd", Downlink::kSparse}, Config{"gd"},
                      Config{"gd", Downlink::kSparse},
                      Config{"gd", Downlink::kDense, Selection::kSampled}, Config{"dgc"},
                      Config{"dgc", Downlink::kSparse, Selection::kExact, true},
                      Config{"dgc", Downlink::kDense, Selection::kSampled},
                      Config{"dgc", Downlink::kDense, Selection::kExact, false, 2.0, true},
                      Config{"dgc", Downlink::kSparse, Selection::kExact, true, 2.0, true},
                      Config{"dgs", Downlink::kSparse},
                      Config{"dgs", Downlink::kSparse, Selection::kSampled},
                      // The DGS reference's published runs: full reply, fixed density,
                      // no weight decay in a worker's first steps.
                      Config{"dgs", Downlink::kDense, Selection::kExact, false, 0.0, false,
                             DensityRule::kFixed, 5}),
    testName);

// Sync mode scales each push by 1/N: W = W - p / N.
TEST(RulesScaleTest, SyncScaleDividesThePush) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const SegmentSpecs specs = mixedSpecs();
  const size_t n = extent(specs);
  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  for (const std::string& name : registry.names()) {
    SCOPED_TRACE(name);
    MethodOptions o;
    o.setNumWorkers(4);
    const Method& method = **registry.find(name);
    const CheckedOptions checked = method.check(o).value();
    auto server = method.makeServer(specs, checked);
    auto worker = method.makeWorker(specs, checked);
    std::vector<float> W = randomVector(rng, n), w = W, grad = randomVector(rng, n);
    Message push;
    worker->makePush(grad, w, StepContext{}, &push);
    std::vector<float> want = W;
    RefServer(specs, 4, o, false).apply(0, push, 0.25f, want);
    server->applyPush(0, push, 0.25f, absl::MakeSpan(W));
    expectVectorsNear(W, want, "W", 1e-6f);
  }
}

}  // namespace
}  // namespace sparseps::test

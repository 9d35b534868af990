// Each method's worker rule on a GPU's memory against the same rule on host memory, step
// by step with error feedback and momentum carried over: the pushes (indices exactly,
// values within float roundings), the model after each reply, and a checkpoint taken on
// the GPU that a host rule loads and continues from. One rule per method serves both
// memories (compressors/vector_ops.h), so this checks the device operations and the
// selection kernels under it; the logic itself is checked against the references by
// rules_test.cc. Skips without a GPU.

#include <cmath>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "compressors/cuda/cuda_kernels.h"
#include "compressors/cuda/vector_ops_cuda.h"
#include "compressors/kernels/device_kernels.h"
#include "gtest/gtest.h"
#include "optim/builtin_methods.h"
#include "tests/compressors/cuda/skip_without_device.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

struct Config {
  std::string method;
  Selection selection = Selection::kExact;
  bool nesterov = false;
  double clip_norm = 0.0;
  bool f16 = false;
  bool error_feedback = true;
};

std::string configName(const Config& c) {
  std::string name = c.method;
  if (c.selection == Selection::kSampled) name += "_sampled";
  if (c.selection == Selection::kStrict) name += "_strict";
  if (c.nesterov) name += "_nesterov";
  if (c.clip_norm > 0) name += "_clip";
  if (c.f16) name += "_f16";
  if (!c.error_feedback) name += "_noef";
  return name;
}
void PrintTo(const Config& c, std::ostream* os) { *os << configName(c); }

// Specs with segments big enough that top-k picks a few hundred from each.
SegmentSpecs specs() {
  SegmentSpecs s;
  size_t offset = 0;
  auto add = [&](uint32_t id, size_t numel, bool compressed) {
    s.push_back(SegmentSpec{id, offset, numel, compressed});
    offset += numel;
  };
  add(10, 20000, true);
  add(3, 64, false);
  add(7, 4608, true);
  add(4, 1, true);
  add(9, 10, false);
  return s;
}

// Host vectors copied to the GPU and back.
class OnGpu {
 public:
  explicit OnGpu(std::shared_ptr<const VectorOps> ops) : ops_(std::move(ops)) {}
  FloatArray copy(const std::vector<float>& host) const {
    FloatArray a = ops_->zeros(host.size());
    ops_->copyIn(a.span(), host);
    return a;
  }
  std::vector<float> back(const FloatArray& a) const {
    std::vector<float> host(a.size());
    ops_->copyOut({{absl::MakeSpan(host), a.span(), 1.0f}}, 0.0f);
    return host;
  }

 private:
  std::shared_ptr<const VectorOps> ops_;
};

void expectNear(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t j = 0; j < got.size(); ++j) {
    ASSERT_NEAR(got[j], want[j], 1e-5f * (1.0f + std::fabs(want[j]))) << what << " at " << j;
  }
}

void expectPushesAgree(const Message& gpu, const Message& host, const std::string& at) {
  ASSERT_EQ(gpu.size(), host.size()) << at;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const std::string what = at + ", segment " + std::to_string(host[i].segment_id);
    EXPECT_EQ(gpu[i].segment_id, host[i].segment_id) << what;
    EXPECT_EQ(gpu[i].dense, host[i].dense) << what;
    EXPECT_EQ(gpu[i].indices, host[i].indices) << what;
    expectNear(gpu[i].values, host[i].values, what + " values");
  }
}

// A reply that exercises both forms: each sparse push back as a delta, each dense one as
// the model it makes.
Message replyTo(const Message& push, const SegmentSpecs& s, const std::vector<float>& w) {
  Message reply = push;
  for (size_t i = 0; i < reply.size(); ++i) {
    SegmentData& seg = reply[i];
    for (size_t t = 0; t < seg.values.size(); ++t) {
      seg.values[t] = seg.dense ? w[s[i].offset + t] - seg.values[t] : -seg.values[t];
    }
  }
  return reply;
}

class DeviceRulesTest : public ::testing::TestWithParam<Config> {};

TEST_P(DeviceRulesTest, RunsAsTheHostRuleStepByStep) {
  SKIP_WITHOUT_DEVICE();
  installDeviceKernels(gpu::makeCudaKernels());
  const Config& c = GetParam();
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const SegmentSpecs s = specs();
  const size_t n = extent(s);

  MethodOptions o;
  o.setLr0(0.1)
      .setMomentum(0.7)
      .setWeightDecay(0.01)
      .setDensity(0.01)
      .setSelection(c.selection)
      .setF16(c.f16)
      .setNumWorkers(4)
      .setGd(GdOptions().setErrorFeedback(c.error_feedback))
      .setDgc(DgcOptions().setNesterov(c.nesterov).setClipNorm(c.clip_norm))
      .setSeed(seed);
  const Method& method = *methodRegistry().find(c.method).value();
  ASSERT_TRUE(method.checkDeviceRule(o).ok());
  const CheckedOptions checked = method.check(o).value();
  const std::shared_ptr<const VectorOps> gpu = gpu::makeCudaVectorOps(0);
  const OnGpu on(gpu);

  std::unique_ptr<WorkerRule> host_rule = method.makeWorker(s, checked);
  std::unique_ptr<WorkerRule> gpu_rule = method.makeWorker(s, checked, gpu);
  std::vector<float> w = randomVector(rng, n);
  FloatArray gpu_w = on.copy(w);
  constexpr int kSteps = 6;
  for (int t = 0; t < kSteps; ++t) {
    const std::string at = "step " + std::to_string(t);
    const std::vector<float> grad = randomVector(rng, n, c.clip_norm > 0 ? 3.0f : 1.0f);
    const FloatArray gpu_grad = on.copy(grad);
    StepContext ctx;
    ctx.lr = t < kSteps / 2 ? 0.1f : 0.05f;
    ctx.step = static_cast<uint64_t>(t);
    Message host_push, gpu_push;
    host_rule->makePush(grad, w, ctx, &host_push);
    gpu_rule->makePush(gpu_grad.span(), gpu_w.span(), ctx, &gpu_push);
    expectPushesAgree(gpu_push, host_push, at);
    const Message reply = replyTo(host_push, s, w);
    host_rule->applyReply(reply, absl::MakeSpan(w));
    gpu_rule->applyReply(reply, gpu_w.span());
    expectNear(on.back(gpu_w), w, "w after the reply at " + at);
    if (HasFailure()) return;
  }

  // The GPU rule's checkpoint, loaded by a host rule, makes the host rule's next push.
  std::unique_ptr<WorkerRule> restored = method.makeWorker(s, checked);
  ASSERT_TRUE(restored->loadState(gpu_rule->saveState()).ok());
  const std::vector<float> grad = randomVector(rng, n);
  StepContext ctx;
  ctx.lr = 0.05f;
  ctx.step = kSteps;
  Message from_host, from_restored;
  host_rule->makePush(grad, w, ctx, &from_host);
  restored->makePush(grad, w, ctx, &from_restored);
  expectPushesAgree(from_restored, from_host, "after the checkpoint");
}

INSTANTIATE_TEST_SUITE_P(
    Methods, DeviceRulesTest,
    ::testing::Values(Config{"msgd"}, Config{"asgd"}, Config{"gd"},
                      Config{"gd", Selection::kSampled}, Config{"gd", Selection::kStrict},
                      Config{"gd", Selection::kExact, false, 0.0, true},
                      Config{"gd", Selection::kExact, false, 0.0, false, false}, Config{"dgc"},
                      Config{"dgc", Selection::kExact, true, 2.0},
                      Config{"dgc", Selection::kExact, false, 0.0, true}, Config{"dgs"},
                      Config{"dgs", Selection::kSampled},
                      Config{"dgs", Selection::kExact, false, 0.0, true}),
    [](const ::testing::TestParamInfo<Config>& info) { return configName(info.param); });

// gd around a compressor that reads host memory only is refused on a GPU, by name.
TEST(DeviceRules, GdWithAHostCompressorSaysItRunsOnHostMemoryOnly) {
  MethodOptions o;
  o.setGd(GdOptions().setCompressor("sign_sgd"));
  const absl::Status s = methodRegistry().find("gd").value()->checkDeviceRule(o);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("sign_sgd"), std::string::npos) << s;
}

}  // namespace
}  // namespace sparseps::test

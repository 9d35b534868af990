// gd with a compressor by name (--compressor): the worker's error-feedback rule and the
// server's update against a plain reference written here, for the scaled sign
// (deterministic), with error feedback on and off; and the options' errors.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "optim/builtin_methods.h"
#include "optim/method_registry.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

// The scaled sign of x: mean |x| times sign(x), sign(0) = +1.
std::vector<float> scaledSign(const std::vector<float>& x) {
  double sum = 0;
  for (float v : x) sum += std::fabs(v);
  const float scale = static_cast<float>(sum / x.size());
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] < 0 ? -scale : scale;
  return out;
}

class GdCompressorTest : public ::testing::TestWithParam<bool> {};

TEST_P(GdCompressorTest, SignWithAndWithoutErrorFeedbackMatchesTheReference) {
  const bool feedback = GetParam();
  std::mt19937_64 rng(7);
  const SegmentSpecs specs = mixedSpecs();
  const size_t n = extent(specs);
  MethodOptions o;
  o.setWeightDecay(0.01)
      .setGd(GdOptions().setCompressor("signsgd").setErrorFeedback(feedback))
      .setNumWorkers(1);
  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  auto method = registry.find("gd");
  ASSERT_TRUE(method.ok());
  absl::StatusOr<CheckedOptions> checked = (*method)->check(o);
  ASSERT_TRUE(checked.ok()) << checked.status();
  o.setDownlink(Downlink::kDense);
  auto worker = (*method)->makeWorker(specs, *checked);
  auto server = (*method)->makeServer(specs, *checked);

  std::vector<float> W = randomVector(rng, n), w = W, ref_W = W;
  std::vector<std::vector<float>> residual(specs.size());
  for (int t = 0; t < 6; ++t) {
    const std::vector<float> grad = randomVector(rng, n);
    const float lr = 0.1f;
    Message push;
    worker->makePush(grad, w, StepContext{lr, 0, static_cast<uint64_t>(t)}, &push);
    server->applyPush(0, push, 1.0f, absl::MakeSpan(W));
    // The reference: per compressed segment v = v + lr*(g + wd*w); s = sign(v); v -= s.
    for (size_t i = 0; i < specs.size(); ++i) {
      const SegmentSpec& spec = specs[i];
      std::vector<float> x(spec.numel);
      for (size_t j = 0; j < spec.numel; ++j) {
        const size_t at = spec.offset + j;
        x[j] = lr * (grad[at] + 0.01f * w[at]);
      }
      std::vector<float> sent = x;
      if (spec.compressed) {
        std::vector<float>& v = residual[i];
        if (v.empty()) v.assign(spec.numel, 0.0f);
        if (feedback) {
          for (size_t j = 0; j < spec.numel; ++j) x[j] += v[j];
        }
        sent = scaledSign(x);
        if (feedback) {
          for (size_t j = 0; j < spec.numel; ++j) v[j] = x[j] - sent[j];
        }
      }
      for (size_t j = 0; j < spec.numel; ++j) ref_W[spec.offset + j] -= sent[j];
    }
    for (size_t j = 0; j < n; ++j) {
      ASSERT_NEAR(W[j], ref_W[j], 1e-5f * (1 + std::fabs(ref_W[j]))) << "step " << t << " at " << j;
    }
    Message reply;
    server->makeReply(0, W, &reply);
    worker->applyReply(reply, absl::MakeSpan(w));
    ASSERT_EQ(w, W);
  }
}

INSTANTIATE_TEST_SUITE_P(ErrorFeedback, GdCompressorTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("on") : std::string("off");
                         });

TEST(GdCompressorOptions, AnUnknownCompressorOrABadOptionNamesTheField) {
  for (const char* spec : {"nope", "qsgd:levels=0", "qsgd:frobnicate=1", "powersgd:rank=x"}) {
    const absl::Status s = MethodOptions().setGd(GdOptions().setCompressor(spec)).validate();
    EXPECT_FALSE(s.ok()) << spec;
    EXPECT_NE(s.message().find("GdOptions.compressor"), std::string::npos) << s;
  }
  EXPECT_TRUE(
      MethodOptions().setGd(GdOptions().setCompressor("qsgd:levels=4,bucket=128")).validate().ok());
}

}  // namespace
}  // namespace sparseps::test

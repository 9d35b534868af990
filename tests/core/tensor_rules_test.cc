// The tensor worker rules of GPU workers (core/torch/tensor_rules.h), run on CPU tensors as
// the stand-in for the device, against the host rules of optim/ (each tested against its
// plain reference in tests/optim): the same gradients, models and replies step after step
// give the same pushes (indices exactly, values to rounding at the segment's scale: tensor
// ops may fuse a multiply-add the host loop rounds twice) and the same models; and a
// checkpoint of either
// loads into the other and continues the same.
#include "core/torch/tensor_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "optim/builtin_methods.h"
#include "optim/method_registry.h"

namespace sparseps {
namespace {

using ::testing::HasSubstr;

SegmentSpecs testSpecs() {
  SegmentSpecs specs(3);
  specs[0].id = 0, specs[0].offset = 0, specs[0].numel = 1000, specs[0].rows = 10;
  specs[0].compressed = true;
  specs[1].id = 1, specs[1].offset = 1000, specs[1].numel = 50;
  specs[1].compressed = false;  // a bias: dense
  specs[2].id = 2, specs[2].offset = 1050, specs[2].numel = 333, specs[2].rows = 9;
  specs[2].compressed = true;
  return specs;
}

struct Case {
  std::string method;
  MethodOptions options;
  std::string label;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.label; }

MethodOptions baseOptions() {
  MethodOptions o;
  o.setMomentum(0.7).setWeightDecay(5e-4).setDensity(0.05).setLr0(0.1).setSeed(11);
  return o;
}

std::vector<Case> cases() {
  std::vector<Case> out = {{"msgd", baseOptions(), "msgd"},
                           {"asgd", baseOptions(), "asgd"},
                           {"dgs", baseOptions(), "dgs"},
                           {"dgs", baseOptions().setF16(true), "dgs_f16"},
                           {"dgs", baseOptions().setSelection(Selection::kSampled), "dgs_sampled"},
                           {"gd", baseOptions(), "gd"},
                           {"gd", baseOptions().setF16(true), "gd_f16"},
                           {"gd", baseOptions().setSelection(Selection::kSampled), "gd_sampled"}};
  MethodOptions no_feedback = baseOptions();
  no_feedback.gd.setErrorFeedback(false);
  out.push_back({"gd", no_feedback, "gd_without_error_feedback"});
  out.push_back({"dgc", baseOptions(), "dgc"});
  out.push_back({"dgc", baseOptions().setF16(true), "dgc_f16"});
  out.push_back({"dgc", baseOptions().setSelection(Selection::kSampled), "dgc_sampled"});
  MethodOptions nesterov = baseOptions().setNumWorkers(4);
  nesterov.dgc.setNesterov(true).setClipNorm(5.0).setWarmup(true);
  out.push_back({"dgc", nesterov, "dgc_nesterov_clipped_warmup"});
  // The DGS reference's settings: a fixed density as the rate falls, no weight decay in a
  // worker's first steps.
  out.push_back({"dgs",
                 baseOptions().setDensityRule(DensityRule::kFixed).setWeightDecayDelay(3),
                 "dgs_fixed_density_weight_decay_delay"});
  out.push_back({"dgc", baseOptions().setWeightDecayDelay(3), "dgc_weight_decay_delay"});
  return out;
}

class TensorRuleTest : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registerBuiltinMethods(registry_).ok());
    auto method = registry_.find(GetParam().method);
    ASSERT_TRUE(method.ok()) << method.status();
    method_ = *method;
  }
  std::unique_ptr<WorkerRule> hostRule() const {
    return method_->makeWorker(specs_, checked());
  }
  CheckedOptions checked() const { return method_->check(GetParam().options).value(); }
  std::unique_ptr<WorkerRule> tensorRule() const {
    auto rule = makeTensorWorkerRule(specs_, checked(), torch::kCPU);
    EXPECT_TRUE(rule.ok()) << rule.status();
    return rule.ok() ? std::move(*rule) : nullptr;
  }
  std::vector<float> normal(float scale) {
    std::vector<float> x(flatNumel(specs_));
    std::normal_distribution<float> dist(0.0f, scale);
    for (float& v : x) v = dist(rng_);
    return x;
  }
  // A reply as a server makes one: the dual-way sparse delta for compressed segments, the
  // dense model for the others.
  Message reply() {
    Message r;
    for (const SegmentSpec& spec : specs_) {
      SegmentData s;
      s.segment_id = spec.id;
      s.numel = static_cast<uint32_t>(spec.numel);
      std::normal_distribution<float> dist(0.0f, 0.01f);
      if (spec.compressed) {
        for (uint32_t i = rng_() % 7; i < spec.numel; i += 1 + rng_() % 20) {
          s.indices.push_back(i);
          s.values.push_back(dist(rng_));
        }
      } else {
        s.dense = true;
        for (size_t i = 0; i < spec.numel; ++i) s.values.push_back(dist(rng_));
      }
      r.push_back(std::move(s));
    }
    return r;
  }

  MethodRegistry registry_;
  const Method* method_ = nullptr;
  const SegmentSpecs specs_ = testSpecs();
  std::mt19937 rng_{20261126};
};

void expectSamePush(const Message& host, const Message& tensor) {
  ASSERT_EQ(host.size(), tensor.size());
  for (size_t i = 0; i < host.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "segment " << host[i].segment_id);
    EXPECT_EQ(tensor[i].segment_id, host[i].segment_id);
    EXPECT_EQ(tensor[i].dense, host[i].dense);
    EXPECT_EQ(tensor[i].numel, host[i].numel);
    ASSERT_EQ(tensor[i].indices, host[i].indices);
    ASSERT_EQ(tensor[i].values.size(), host[i].values.size());
    // To rounding at the segment's scale: momentum sums cancel, so a value may be far
    // smaller than the terms whose rounding it carries.
    float scale = 0.0f;
    for (float v : host[i].values) scale = std::max(scale, std::abs(v));
    for (size_t j = 0; j < host[i].values.size(); ++j) {
      ASSERT_NEAR(tensor[i].values[j], host[i].values[j], 1e-6f * scale + 1e-12f) << "value " << j;
    }
  }
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-6f * std::abs(want[i]) + 1e-9f) << "at " << i;
  }
}

TEST_P(TensorRuleTest, PushesAndModelsFollowTheHostRule) {
  std::unique_ptr<WorkerRule> host = hostRule(), tensor = tensorRule();
  ASSERT_NE(tensor, nullptr);
  std::vector<float> w_host = normal(0.1f);
  std::vector<float> w_tensor = w_host;
  const float rates[] = {0.1f, 0.1f, 0.05f, 0.05f, 0.01f, 0.01f};
  for (uint64_t step = 0; step < 6; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    const std::vector<float> grad = normal(1.0f);
    const StepContext ctx{rates[step], /*epoch=*/static_cast<int>(step / 2), step};  // warm-up
    Message push_host, push_tensor;
    host->makePush(grad, w_host, ctx, &push_host);
    tensor->makePush(grad, w_tensor, ctx, &push_tensor);
    expectSamePush(push_host, push_tensor);
    const Message r = reply();
    host->applyReply(r, absl::MakeSpan(w_host));
    tensor->applyReply(r, absl::MakeSpan(w_tensor));
    expectNear(w_tensor, w_host);
  }
}

// Steps `from` 3 times, moves its state into `to` (a fresh rule), then both make the same
// next push.
void continuesAfterLoad(WorkerRule& from, WorkerRule& to, std::vector<float> w,
                        const std::vector<std::vector<float>>& grads) {
  Message push;
  for (uint64_t step = 0; step < 3; ++step) {
    from.makePush(grads[step], w, StepContext{0.1f, 0, step}, &push);
  }
  ASSERT_TRUE(to.loadState(from.saveState()).ok());
  Message next_from, next_to;
  from.makePush(grads[3], w, StepContext{0.1f, 0, 3}, &next_from);
  to.makePush(grads[3], w, StepContext{0.1f, 0, 3}, &next_to);
  expectSamePush(next_from, next_to);
}

TEST_P(TensorRuleTest, CheckpointsMoveBetweenTheHostAndTheTensorRule) {
  const std::vector<float> w = normal(0.1f);
  std::vector<std::vector<float>> grads;
  for (int i = 0; i < 4; ++i) grads.push_back(normal(1.0f));
  {
    SCOPED_TRACE("tensor -> host");
    std::unique_ptr<WorkerRule> tensor = tensorRule(), host = hostRule();
    continuesAfterLoad(*tensor, *host, w, grads);
  }
  {
    SCOPED_TRACE("host -> tensor");
    std::unique_ptr<WorkerRule> host = hostRule(), tensor = tensorRule();
    continuesAfterLoad(*host, *tensor, w, grads);
  }
}

TEST_P(TensorRuleTest, RefusesAStateOfAnotherModel) {
  std::unique_ptr<WorkerRule> tensor = tensorRule();
  SegmentSpecs other = specs_;
  other[2].numel = 334;
  std::unique_ptr<WorkerRule> host = method_->makeWorker(other, checked());
  EXPECT_FALSE(tensor->loadState(host->saveState()).ok());
  EXPECT_FALSE(tensor->loadState("not a state").ok());
}

INSTANTIATE_TEST_SUITE_P(Methods, TensorRuleTest, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.label; });

TEST(TensorRules, GdAroundAnotherCompressorSaysToRunOnTheCpu) {
  MethodOptions o;
  for (const char* method : {"msgd", "asgd", "dgs", "dgc", "gd"}) {
    EXPECT_TRUE(checkTensorWorkerRule(method, o).ok()) << method;
  }
  o.gd.setCompressor("qsgd");
  absl::Status s = checkTensorWorkerRule("gd", o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("gd with --compressor=qsgd"));
  EXPECT_THAT(s.message(), HasSubstr("--device=cpu"));

  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  auto gd = registry.find("gd");
  ASSERT_TRUE(gd.ok());
  auto rule = makeTensorWorkerRule(testSpecs(), (*gd)->check(o).value(), torch::kCPU);
  EXPECT_EQ(rule.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sparseps

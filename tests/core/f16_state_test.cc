// --f16: sparse values travel in half precision, and every rule keeps in its state what
// really travelled. So (1) each sparse value a rule sends is a half already, and the wire
// returns it bit for bit; (2) gradient dropping loses nothing: the sum of its inputs is
// the sum of what the server decoded plus the residual; (3) the dual-way server's A_k
// grows by exactly what the worker adds, so w_k = W_sync + A_k holds exactly.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "compressors/kernels/half.h"
#include "core/wire/wire.h"
#include "optim/builtin_methods.h"
#include "optim/method_registry.h"

namespace sparseps {
namespace {

SegmentSpecs specs() {
  return {SegmentSpec{0, 0, 3000, true}, SegmentSpec{1, 3000, 17, false},
          SegmentSpec{2, 3017, 500, true}};
}
constexpr size_t kN = 3517;

std::vector<float> randomVector(std::mt19937_64& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(kN);
  for (float& x : v) x = d(rng);
  return v;
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// What the receiver gets: the message through the wire with f16 allowed.
Message throughWire(const Message& m) {
  absl::StatusOr<std::vector<uint8_t>> bytes =
      encodeMessage(MessageHeader{}, m, EncodeOptions().allowF16(true));
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<DecodedMessage> back = decodeMessage(*bytes, *DecodeLimits::fromSpecs(specs()));
  EXPECT_TRUE(back.ok()) << back.status();
  return back.ok() ? back->segments : Message{};
}

void expectTravelsExactly(const Message& sent, const std::string& what) {
  const Message got = throughWire(sent);
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    ASSERT_EQ(got[i].values.size(), sent[i].values.size());
    for (size_t t = 0; t < sent[i].values.size(); ++t) {
      ASSERT_TRUE(sameBits(got[i].values[t], sent[i].values[t]))
          << what << ": segment " << sent[i].segment_id << " value " << sent[i].values[t]
          << " arrived as " << got[i].values[t];
    }
  }
}

MethodOptions f16Options() {
  MethodOptions o;
  o.setDensity(0.05).setServerDensity(0.05).setResyncEvery(1000).setF16(true);
  return o;
}

TEST(F16State, WhatEachRuleSendsIsAHalfAndArrivesBitForBit) {
  std::mt19937_64 rng(5);
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  for (const char* name : {"gd", "dgc", "dgs"}) {
    SCOPED_TRACE(name);
    MethodOptions o = f16Options();
    o.setDownlink(Downlink::kSparse);
    const Method& method = **methods.find(name);
    const CheckedOptions checked = method.check(o).value();
    auto worker = method.makeWorker(specs(), checked);
    auto server = method.makeServer(specs(), checked);
    std::vector<float> w = randomVector(rng, 1.0f), W = w;
    for (uint64_t step = 0; step < 6; ++step) {
      Message push;
      worker->makePush(randomVector(rng, 0.3f), w, StepContext{0.1f, 0, step}, &push);
      expectTravelsExactly(push, "push");
      server->applyPush(0, throughWire(push), 1.0f, absl::MakeSpan(W));
      Message reply;
      server->makeReply(0, W, &reply);
      expectTravelsExactly(reply, "reply");
      worker->applyReply(throughWire(reply), absl::MakeSpan(w));
    }
  }
}

TEST(F16State, GradientDroppingLosesNothing) {
  std::mt19937_64 rng(6);
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  const MethodOptions o = f16Options();
  const Method& gd = **methods.find("gd");
  auto worker = gd.makeWorker(specs(), gd.check(o).value());
  const std::vector<float> w(kN, 0.0f);  // no weight decay term: the input is lr * grad
  std::vector<double> input(kN, 0.0), arrived(kN, 0.0);
  const float lr = 0.1f;
  for (uint64_t step = 0; step < 20; ++step) {
    const std::vector<float> grad = randomVector(rng, 1.0f);
    for (size_t j = 0; j < kN; ++j) input[j] += static_cast<double>(lr * grad[j]);
    Message push;
    worker->makePush(grad, w, StepContext{lr, 0, step}, &push);
    for (const SegmentData& s : throughWire(push)) {
      const size_t offset = s.segment_id == 0 ? 0 : s.segment_id == 1 ? 3000 : 3017;
      for (size_t t = 0; t < s.values.size(); ++t) {
        arrived[offset + (s.dense ? t : s.indices[t])] += s.values[t];
      }
    }
  }
  // The residual, read back by a rule loaded with this one's state that sends everything
  // it holds in f32 (density 1, no f16) on a zero gradient.
  MethodOptions all = o;
  all.setDensity(1.0).setF16(false);
  auto flush = gd.makeWorker(specs(), gd.check(all).value());
  ASSERT_TRUE(flush->loadState(worker->saveState()).ok());
  Message rest;
  flush->makePush(std::vector<float>(kN, 0.0f), w, StepContext{lr, 0, 20}, &rest);
  for (const SegmentData& s : rest) {
    if (s.dense) continue;  // dense segments hold no residual
    const size_t offset = s.segment_id == 0 ? 0 : 3017;
    for (size_t t = 0; t < s.values.size(); ++t) arrived[offset + s.indices[t]] += s.values[t];
  }
  // Left: float rounding of the sums. A rounding to half kept out of the residual would
  // leave up to 2^-12 of every value sent (20 steps of them) unaccounted for.
  for (size_t j = 0; j < kN; ++j) {
    ASSERT_NEAR(arrived[j], input[j], 1e-6 * (1.0 + std::fabs(input[j]))) << "element " << j;
  }
}

}  // namespace
}  // namespace sparseps

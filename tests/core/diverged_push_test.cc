// A worker whose gradient diverged (an infinity or a NaN in it) must not reach the model
// as finite numbers: for every built-in method, with its default options, the push the
// worker rule makes from such a gradient is refused by the encoder or by the bounded
// decoder every server uses, so the server drops that worker by name (the runtime tests
// check the dropping) instead of training on a made-up value.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/wire/wire.h"
#include "optim/builtin_methods.h"
#include "optim/method_registry.h"

namespace sparseps {
namespace {

TEST(DivergedPush, EveryMethodsPushOfANonFiniteGradientIsRefused) {
  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  // A large compressed segment (the SIMD loops' vector body and tail) and a small dense one.
  const SegmentSpecs specs = {SegmentSpec{0, 0, 1003, true}, SegmentSpec{1, 1003, 5, false}};
  const size_t n = 1008;
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::string& name : registry.names()) {
    const Method* method = *registry.find(name);
    MethodOptions o;
    o.setNumWorkers(2);
    absl::StatusOr<CheckedOptions> checked = method->check(o);
    ASSERT_TRUE(checked.ok()) << name;
    for (float bad : {inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
      for (size_t at : {size_t{0}, size_t{17}, size_t{1002}, size_t{1005}}) {
        SCOPED_TRACE(name + " " + std::to_string(bad) + " at " + std::to_string(at));
        auto worker = method->makeWorker(specs, *checked);
        std::vector<float> w(n, 0.5f), grad(n);
        for (size_t i = 0; i < n; ++i) grad[i] = std::sin(0.37f * static_cast<float>(i));
        grad[at] = bad;
        Message push;
        worker->makePush(grad, w, StepContext{0.1f, 0, 1}, &push);
        MessageHeader header;
        header.kind = MessageKind::kPush;
        absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(header, push);
        if (!m.ok()) continue;  // refused by the sender
        absl::StatusOr<MessageHeader> h = decodeHeader(*m);
        ASSERT_TRUE(h.ok()) << h.status();
        DecodeLimits limits = DecodeLimits().values(ValueCheck::kBounded);
        for (const SegmentSpec& s : specs) limits.allow(s.id, s.numel);
        absl::StatusOr<std::vector<SegmentData>> got =
            decodePayload(*h, absl::MakeConstSpan(*m).subspan(kHeaderBytes), limits);
        EXPECT_FALSE(got.ok()) << "the push of a non-finite gradient was accepted";
      }
    }
  }
}

}  // namespace
}  // namespace sparseps

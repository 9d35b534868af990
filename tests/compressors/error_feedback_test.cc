#include "compressors/error_feedback.h"

#include <gtest/gtest.h>

#include "compressors/apply.h"
#include "compressors/registry.h"
#include "tests/compressors/test_util.h"

namespace sparseps {
namespace {

// Error feedback loses nothing: after any number of steps, per element,
// sum of inputs == sum of what was sent + residual.
TEST(ErrorFeedback, SumOfInputsEqualsSumSentPlusResidual) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (const char* name : {"topk", "sampled", "randomk", "dense"}) {
    SCOPED_TRACE(name);
    auto made = makeRegisteredCompressor(name);
    ASSERT_TRUE(made.ok()) << made.status();
    ErrorFeedback ef(std::move(*made));
    const std::vector<size_t> sizes = {1, 17, 5000};
    std::vector<std::vector<double>> inputs(sizes.size()), sent(sizes.size());
    for (size_t s = 0; s < sizes.size(); ++s) {
      inputs[s].assign(sizes[s], 0.0);
      sent[s].assign(sizes[s], 0.0);
    }
    for (uint64_t step = 0; step < 20; ++step) {
      for (size_t s = 0; s < sizes.size(); ++s) {
        std::vector<float> x = testing::makeInput(sizes[s], testing::Dist::kNormal, &rng);
        SelectContext ctx;
        ctx.segment_id = static_cast<uint32_t>(10 + s);
        ctx.step = step;
        ctx.seed = seed;
        SegmentData out;
        ef.compress(x, 0.01, ctx, &out);
        EXPECT_EQ(out.segment_id, ctx.segment_id);
        std::vector<float> dense(sizes[s], 0.0f);
        scatterAdd(absl::MakeSpan(dense), out, 1.0f);
        for (size_t i = 0; i < sizes[s]; ++i) {
          inputs[s][i] += x[i];
          sent[s][i] += dense[i];
        }
      }
    }
    for (size_t s = 0; s < sizes.size(); ++s) {
      absl::Span<const float> e = ef.residual(static_cast<uint32_t>(10 + s));
      ASSERT_EQ(e.size(), sizes[s]);
      for (size_t i = 0; i < sizes[s]; ++i) {
        ASSERT_NEAR(inputs[s][i], sent[s][i] + e[i], 1e-4 * (1 + std::abs(inputs[s][i])))
            << "segment " << s << " element " << i;
      }
    }
  }
}

TEST(ErrorFeedback, ResidualIsWhatWasNotSentAndCanBeRestored) {
  auto made = makeRegisteredCompressor("topk");
  ASSERT_TRUE(made.ok());
  ErrorFeedback ef(std::move(*made));
  std::vector<float> x = {1.0f, -5.0f, 2.0f, 0.5f};
  SelectContext ctx;
  ctx.segment_id = 4;
  SegmentData out;
  ef.compress(x, 0.25, ctx, &out);  // k = 1: sends -5 at index 1
  EXPECT_EQ(out.indices, (std::vector<uint32_t>{1}));
  absl::Span<const float> e = ef.residual(4);
  EXPECT_EQ(std::vector<float>(e.begin(), e.end()), (std::vector<float>{1.0f, 0.0f, 2.0f, 0.5f}));
  EXPECT_TRUE(ef.residual(5).empty());
  std::vector<float> saved(e.begin(), e.end());
  ef.clear();
  EXPECT_TRUE(ef.residual(4).empty());
  ef.setResidual(4, saved);
  ef.compress(x, 0.25, ctx, &out);  // compensated: {2, -5, 4, 1}
  EXPECT_EQ(out.indices, (std::vector<uint32_t>{1}));
  EXPECT_EQ(ef.residual(4)[2], 4.0f);
  EXPECT_EQ(ef.name(), "ef(topk)");
}

}  // namespace
}  // namespace sparseps

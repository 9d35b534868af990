#include "compressors/error_feedback.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

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
  ef.setResidual(4, {});
  EXPECT_TRUE(ef.residual(4).empty());
  ef.setResidual(4, saved);
  ef.compress(x, 0.25, ctx, &out);  // compensated: {2, -5, 4, 1}
  EXPECT_EQ(out.indices, (std::vector<uint32_t>{1}));
  EXPECT_EQ(ef.residual(4)[2], 4.0f);
  EXPECT_EQ(ef.name(), "ef(topk)");
}

// Residuals laid out as the specs (a compressed segment, a dense gap, another compressed
// one): a step's compressSegments, or adding x to laidOut() and compressAdded, gives what
// compress() of each segment gives with residuals of their own, step after step.
TEST(ErrorFeedback, LaidOutResidualsCompressAStepAsSegmentBySegment) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  const SegmentSpecs specs = {SegmentSpec{7, 0, 300, true}, SegmentSpec{8, 300, 5, false},
                              SegmentSpec{9, 305, 1000, true}};
  for (const char* name : {"topk", "topk_strict", "randomk", "qsgd"}) {
    SCOPED_TRACE(name);
    ErrorFeedback alone(std::move(*makeRegisteredCompressor(name)));
    ErrorFeedback laid(std::move(*makeRegisteredCompressor(name)));
    ErrorFeedback added(std::move(*makeRegisteredCompressor(name)));
    laid.layOut(specs);
    added.layOut(specs);
    EXPECT_EQ(laid.residual(9).size(), 1000u);  // zeros from the start
    for (uint64_t step = 0; step < 5; ++step) {
      const std::vector<float> x = testing::makeInput(1305, testing::Dist::kNormal, &rng);
      std::vector<SegmentData> by_step(2), by_adding(2), by_segment(2);
      std::vector<SegmentSelect> segments, adding;
      for (size_t i = 0; i < 2; ++i) {
        const SegmentSpec& spec = specs[2 * i];
        const SelectContext ctx{spec.id, step, seed};
        segments.push_back({spec.offset, spec.numel, 0.05, ctx, &by_step[i]});
        adding.push_back({spec.offset, spec.numel, 0.05, ctx, &by_adding[i]});
        alone.compress(absl::MakeConstSpan(x).subspan(spec.offset, spec.numel), 0.05, ctx,
                       &by_segment[i]);
        absl::Span<float> e = added.laidOut().subspan(spec.offset, spec.numel);
        for (size_t j = 0; j < spec.numel; ++j) e[j] += x[spec.offset + j];
      }
      laid.compressSegments(x, segments);
      added.compressAdded(adding);
      for (size_t i = 0; i < 2; ++i) {
        const uint32_t id = specs[2 * i].id;
        for (const auto* got : {&by_step[i], &by_adding[i]}) {
          EXPECT_EQ(got->segment_id, id);
          EXPECT_EQ(got->indices, by_segment[i].indices) << "step " << step;
          EXPECT_EQ(got->values, by_segment[i].values) << "step " << step;
          EXPECT_EQ(got->packed, by_segment[i].packed) << "step " << step;
        }
        const absl::Span<const float> want = alone.residual(id);
        for (const ErrorFeedback* ef : {&laid, &added}) {
          const absl::Span<const float> e = ef->residual(id);
          EXPECT_EQ(std::vector<float>(e.begin(), e.end()),
                    std::vector<float>(want.begin(), want.end()))
              << "step " << step;
        }
      }
    }
    // Removing a laid-out residual zeroes it in place.
    laid.setResidual(9, {});
    const absl::Span<const float> e = laid.residual(9);
    EXPECT_EQ(e.data(), laid.laidOut().data() + 305);
    EXPECT_TRUE(std::all_of(e.begin(), e.end(), [](float v) { return v == 0.0f; }));
  }
}

// An empty compressed segment (last in the layout) stays laid out after a checkpoint
// restores its empty residual.
TEST(ErrorFeedback, AnEmptyLaidOutSegmentStaysLaidOut) {
  ErrorFeedback ef(std::move(*makeRegisteredCompressor("topk")));
  ef.layOut({SegmentSpec{1, 0, 8, true}, SegmentSpec{2, 8, 0, true}});
  ef.setResidual(2, {});
  ef.setResidual(1, {});
  std::vector<SegmentData> outs(2);
  const std::vector<SegmentSelect> segments = {{0, 8, 0.25, SelectContext{1}, &outs[0]},
                                               {8, 0, 0.25, SelectContext{2}, &outs[1]}};
  for (size_t j = 0; j < 8; ++j) ef.laidOut()[j] = static_cast<float>(j);
  ef.compressAdded(segments);  // laid out: would end the process otherwise
  EXPECT_EQ(outs[0].indices, (std::vector<uint32_t>{6, 7}));
  EXPECT_TRUE(outs[1].indices.empty());
  EXPECT_EQ(ef.residual(1)[7], 0.0f);
}

TEST(ErrorFeedback, CompressAddedWithoutALayoutEndsTheProcessNamingTheFix) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ErrorFeedback ef(std::move(*makeRegisteredCompressor("topk")));
  SegmentData out;
  const std::vector<SegmentSelect> segments = {{0, 10, 0.1, SelectContext{3}, &out}};
  EXPECT_DEATH(ef.compressAdded(segments), "call layOut with their specs first");
}

}  // namespace
}  // namespace sparseps

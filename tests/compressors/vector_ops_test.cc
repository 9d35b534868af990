// The host's VectorOps::accumulateSegments against a plain loop: each segment's part of the
// flat vector takes y = a * y + b * (g + wd * w), the gaps between them stay as they were,
// and with wd == 0 w is not read. (tests/compressors/cuda/test_vector_ops.cc compares a
// GPU's with it.)

#include "compressors/vector_ops.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tests/compressors/test_util.h"

namespace sparseps {
namespace {

TEST(VectorOps, AccumulateSegmentsUpdatesEachSegmentAndNothingElse) {
  std::mt19937_64 rng(7);
  constexpr size_t kN = 1000;
  const std::vector<float> g = testing::makeInput(kN, testing::Dist::kNormal, &rng);
  const std::vector<float> w = testing::makeInput(kN, testing::Dist::kNormal, &rng);
  // Apart, in increasing offset order, with gaps before, between and after; one empty.
  const std::vector<SegmentSelect> segments = {
      {10, 100, 0.1, {}, nullptr}, {300, 0, 0.1, {}, nullptr}, {400, 250, 0.1, {}, nullptr}};
  for (const float wd : {0.25f, 0.0f}) {
    SCOPED_TRACE(wd);
    const std::vector<float> y0 = testing::makeInput(kN, testing::Dist::kNormal, &rng);
    std::vector<float> want = y0;
    for (const SegmentSelect& s : segments) {
      for (size_t j = s.offset; j < s.offset + s.numel; ++j) {
        want[j] = 0.9f * want[j] + 0.1f * (g[j] + wd * w[j]);
      }
    }
    std::vector<float> y = y0;
    // With wd == 0, w is left out altogether.
    hostVectorOps()->accumulateSegments(
        absl::MakeSpan(y), 0.9f, 0.1f, g,
        wd == 0.0f ? absl::Span<const float>() : absl::MakeConstSpan(w), wd, segments);
    EXPECT_EQ(y, want);
  }
}

}  // namespace
}  // namespace sparseps

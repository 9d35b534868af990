// A reply's dense segment replaces the model, a sparse one adds to it.

#include "optim/message_ops.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

TEST(MessageOpsTest, DenseReplyReplacesAndSparseReplyAdds) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const SegmentSpecs specs = mixedSpecs();
  const SegmentIndex index(specs);
  std::vector<float> w = randomVector(rng, extent(specs));
  const std::vector<float> before = w;
  const std::vector<float> model = randomVector(rng, 7);
  const std::vector<float> delta = randomVector(rng, 45);
  applyModelReply({denseOf(3, model), sparseOf(7, delta, {1, 44})}, index, absl::MakeSpan(w),
                  *hostVectorOps());
  for (size_t j = 0; j < w.size(); ++j) {
    float want = before[j];
    if (j >= 120 && j < 127) want = model[j - 120];
    if (j == 127 + 1) want = before[j] + delta[1];
    if (j == 127 + 44) want = before[j] + delta[44];
    EXPECT_EQ(w[j], want) << j;
  }
}

// The flag, not the fill, decides: a sparse segment naming every index is still a delta
// (the wire format must keep a segment's dense flag, see optim/method.h).
TEST(MessageOpsTest, SparseReplyCoveringEveryIndexStillAdds) {
  const SegmentIndex index(mixedSpecs());
  std::vector<float> w(extent(mixedSpecs()), 1.0f);
  applyModelReply({sparseOf(4, {2.5f}, {0})}, index, absl::MakeSpan(w), *hostVectorOps());
  EXPECT_EQ(w[172], 3.5f);
  applyModelReply({denseOf(4, {2.5f})}, index, absl::MakeSpan(w), *hostVectorOps());
  EXPECT_EQ(w[172], 2.5f);
}

}  // namespace
}  // namespace sparseps::test

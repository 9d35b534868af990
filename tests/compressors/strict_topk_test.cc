#include "compressors/strict_topk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "compressors/segment_data.h"
#include "compressors/segment_spec.h"
#include "tests/compressors/test_util.h"

namespace sparseps {
namespace {

// The reference's selection written out: the k-th largest |x| by a full sort, then every
// element strictly above it, in index order.
std::vector<uint32_t> referenceStrict(const std::vector<float>& x, size_t k) {
  std::vector<float> mags;
  for (float v : x) mags.push_back(std::fabs(v));
  std::sort(mags.begin(), mags.end(), std::greater<float>());
  const float kth = mags[k - 1];
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < x.size(); ++i) {
    if (std::fabs(x[i]) > kth) out.push_back(i);
  }
  return out;
}

SegmentData select(const std::vector<float>& x, double density) {
  SegmentData out;
  StrictTopkCompressor().compress(x, density, SelectContext{7, 0, 0}, &out);
  return out;
}

TEST(StrictTopk, SelectsNothingWhenKIsOne) {
  // density 0.01: k = 1 for every tensor under 200 elements (a BatchNorm weight, a bias).
  const std::vector<float> x = {0.5f, -3.0f, 2.0f, 0.25f};
  SegmentData out = select(x, 0.01);
  EXPECT_FALSE(out.dense);
  EXPECT_EQ(out.numel, 4u);
  EXPECT_TRUE(out.indices.empty());
  std::vector<float> hundred_ninety_nine(199, 1.0f);
  hundred_ninety_nine[3] = 5.0f;
  EXPECT_TRUE(select(hundred_ninety_nine, 0.01).indices.empty());
}

TEST(StrictTopk, KeepsOneOfTheTwoLargestWhenKIsTwo) {
  std::vector<float> x(200, 0.1f);
  x[17] = -4.0f;
  x[150] = 3.0f;  // the k-th (2nd) largest: not above itself
  SegmentData out = select(x, 0.01);
  EXPECT_EQ(out.indices, (std::vector<uint32_t>{17}));
  EXPECT_EQ(out.values, (std::vector<float>{-4.0f}));
}

TEST(StrictTopk, DropsEveryTieOfTheKthLargest) {
  // k = 3; the 3rd largest magnitude, 2, is shared by three elements: only 9 is above it.
  std::vector<float> x(300, 0.0f);
  x[5] = 2.0f;
  x[6] = -2.0f;
  x[200] = 9.0f;
  x[250] = 2.0f;
  EXPECT_EQ(select(x, 0.01).indices, (std::vector<uint32_t>{200}));
  // All equal: nothing is above the k-th largest.
  EXPECT_TRUE(select(std::vector<float>(1000, 1.5f), 0.1).indices.empty());
}

TEST(StrictTopk, ANonFiniteKthLargestIsSentNotKept) {
  // k = 1 would select nothing; a NaN (or Inf) there travels instead, for the wire to refuse.
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> x(100, 0.5f);
    x[37] = bad;
    SegmentData out = select(x, 0.01);
    EXPECT_EQ(out.indices, (std::vector<uint32_t>{37}));
  }
}

TEST(StrictTopk, MatchesTheSortedReference) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (testing::Dist dist : {testing::Dist::kNormal, testing::Dist::kTies}) {
    SCOPED_TRACE(testing::distName(dist));
    for (size_t n : {size_t{150}, size_t{200}, size_t{999}, size_t{4096}, size_t{65537}}) {
      std::vector<float> x = testing::makeInput(n, dist, &rng);
      for (double density : {0.001, 0.01, 0.1}) {
        SegmentData out = select(x, density);
        EXPECT_EQ(out.indices, referenceStrict(x, topkCount(n, density)))
            << "n=" << n << " density=" << density;
        ASSERT_EQ(out.values.size(), out.indices.size());
        for (size_t j = 0; j < out.indices.size(); ++j) {
          EXPECT_TRUE(testing::sameBits(out.values[j], x[out.indices[j]]));
        }
      }
    }
  }
}

}  // namespace
}  // namespace sparseps

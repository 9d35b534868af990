#include "compressors/topk.h"

#include <gtest/gtest.h>

#include "compressors/segment_spec.h"
#include "compressors/select_kernels.h"
#include "tests/compressors/test_util.h"

namespace sparseps {
namespace {

using testing::Dist;

void expectTopk(const std::vector<float>& x, size_t k, SimdLevel level) {
  std::vector<uint32_t> idx;
  std::vector<float> val;
  topkExact(x, k, &idx, &val, level);
  std::vector<uint32_t> want = testing::referenceTopk(x, k);
  ASSERT_EQ(idx, want) << "n=" << x.size() << " k=" << k;
  ASSERT_EQ(val.size(), idx.size());
  for (size_t j = 0; j < idx.size(); ++j) {
    ASSERT_TRUE(testing::sameBits(val[j], x[idx[j]])) << "j=" << j;
  }
}

class TopkTest : public ::testing::TestWithParam<SimdLevel> {};

TEST_P(TopkTest, MatchesSortReferenceOnSmallAndOddSizes) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kAllEqual, Dist::kSpecial, Dist::kZeros}) {
    SCOPED_TRACE(testing::distName(dist));
    for (size_t n : {1, 2, 7, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1000, 2049, 5003}) {
      std::vector<float> x = testing::makeInput(n, dist, &rng);
      for (size_t k : {size_t{0}, size_t{1}, size_t{2}, n / 3, n / 2, n - 1, n, n + 5}) {
        expectTopk(x, k, GetParam());
      }
    }
  }
}

TEST_P(TopkTest, MatchesSortReferenceOnSampledPath) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kAllEqual, Dist::kSpecial, Dist::kZeros,
                    Dist::kRare}) {
    SCOPED_TRACE(testing::distName(dist));
    for (size_t n : {size_t{65536}, size_t{300007}}) {
      std::vector<float> x = testing::makeInput(n, dist, &rng);
      for (double density : {0.0001, 0.001, 0.01, 0.25}) {
        expectTopk(x, topkCount(n, density), GetParam());
      }
    }
  }
}

TEST_P(TopkTest, CompressorFillsSegment) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  std::vector<float> x = testing::makeInput(100003, Dist::kNormal, &rng);
  ExactTopkCompressor c(GetParam());
  SegmentData out;
  SelectContext ctx;
  ctx.segment_id = 7;
  c.compress(x, 0.001, ctx, &out);
  EXPECT_EQ(out.segment_id, 7u);
  EXPECT_EQ(out.numel, x.size());
  EXPECT_FALSE(out.dense);
  EXPECT_EQ(out.indices, testing::referenceTopk(x, 100));
}

INSTANTIATE_TEST_SUITE_P(Levels, TopkTest, ::testing::ValuesIn(testing::usableLevels()),
                         [](const auto& info) { return std::string(simdLevelName(info.param)); });

TEST(TopkOrder, NanAboveInfAboveFiniteAndZerosEqual) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {1.0f, -0.0f, -inf, 0.0f, nan, 3.0f, -nan};
  std::vector<uint32_t> idx;
  std::vector<float> val;
  topkExact(x, 2, &idx, &val);
  EXPECT_EQ(idx, (std::vector<uint32_t>{4, 6}));  // both NaNs
  topkExact(x, 3, &idx, &val);
  EXPECT_EQ(idx, (std::vector<uint32_t>{2, 4, 6}));  // then -Inf
  std::vector<float> zeros = {0.0f, -0.0f, 0.0f, -0.0f};
  topkExact(zeros, 2, &idx, &val);
  EXPECT_EQ(idx, (std::vector<uint32_t>{0, 1}));  // -0 == +0: the lower indices win
}

// The internal kernels, including the radix fallback topkExact uses when its sampled
// bracket misses (which random inputs practically never trigger).
TEST(SelectKernels, AppendAtLeastMatchesScalarLoop) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kSpecial}) {
    for (size_t n : {0, 1, 7, 63, 64, 65, 100, 1000, 4099}) {
      std::vector<float> x = testing::makeInput(n, dist, &rng);
      for (float thr : {0.0f, 0.5f, 1.0f, 2.5f, std::numeric_limits<float>::infinity()}) {
        std::vector<uint32_t> want;
        for (size_t i = 0; i < n; ++i) {
          if (magnitudeKey(x[i]) >= magnitudeKey(thr)) want.push_back(static_cast<uint32_t>(i) + 5);
        }
        for (SimdLevel level : testing::usableLevels()) {
          std::vector<uint32_t> idx = {99};
          std::vector<float> val = {99.0f};
          appendAtLeast(x, magnitudeKey(thr), 5, level, &idx, &val);
          ASSERT_EQ(idx.size(), want.size() + 1) << simdLevelName(level);
          ASSERT_EQ(idx[0], 99u);
          ASSERT_EQ(std::vector<uint32_t>(idx.begin() + 1, idx.end()), want) << simdLevelName(level);
          for (size_t j = 1; j < idx.size(); ++j) ASSERT_TRUE(testing::sameBits(val[j], x[idx[j] - 5]));
        }
      }
    }
  }
}

TEST(SelectKernels, KthLargestKeyAndEmitTopkMatchSort) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kAllEqual, Dist::kSpecial, Dist::kZeros}) {
    for (size_t n : {1, 3, 2048, 2049, 70001}) {
      std::vector<float> x = testing::makeInput(n, dist, &rng);
      std::vector<uint32_t> keys(n);
      for (size_t i = 0; i < n; ++i) keys[i] = magnitudeKey(x[i]);
      std::sort(keys.begin(), keys.end(), std::greater<uint32_t>());
      for (size_t k : {size_t{1}, n / 2 + 1, n}) {
        KthKey t = kthLargestKey(x, k);
        ASSERT_EQ(t.key, keys[k - 1]);
        ASSERT_EQ(t.above, static_cast<size_t>(std::lower_bound(keys.begin(), keys.end(), t.key,
                                                                std::greater<uint32_t>()) -
                                                keys.begin()));
        std::vector<uint32_t> idx;
        std::vector<float> val;
        emitTopk(x, k, &idx, &val);
        ASSERT_EQ(idx, testing::referenceTopk(x, k));
      }
    }
  }
}

}  // namespace
}  // namespace sparseps

#include "compressors/random_k.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "compressors/select_seed.h"
#include "tests/compressors/test_util.h"

namespace sparseps {
namespace {

std::vector<uint32_t> drawIndices(size_t numel, size_t k, uint64_t bits) {
  std::vector<uint32_t> out;
  randomKIndices(numel, k, bits, &out);
  return out;
}

TEST(RandomK, DistinctIncreasingInRangeAndReproducible) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (size_t numel : {1, 2, 7, 100, 4096, 100003}) {
    for (size_t k : {size_t{0}, size_t{1}, numel / 100, numel / 16, numel / 2, numel, numel + 3}) {
      uint64_t bits = rng();
      std::vector<uint32_t> idx = drawIndices(numel, k, bits);
      ASSERT_EQ(idx.size(), std::min(k, numel)) << numel << " " << k;
      for (size_t j = 0; j < idx.size(); ++j) {
        ASSERT_LT(idx[j], numel);
        if (j > 0) {
          ASSERT_LT(idx[j - 1], idx[j]);
        }
      }
      // The same again, into a vector that holds other indices (a reused message slot),
      // after draws that left nothing behind in the thread's scratch.
      std::vector<uint32_t> reused = {5, 3, 9};
      randomKIndices(numel, k, bits, &reused);
      ASSERT_EQ(reused, idx);
    }
  }
}

// Floyd's set is freed after a draw of more than 2^16; the draws after it are unchanged.
TEST(RandomK, ALargeFloydDrawLeavesLaterDrawsAsTheyWere) {
  const std::vector<uint32_t> before = drawIndices(1000, 20, 5);
  const std::vector<uint32_t> large = drawIndices(size_t{1} << 21, 70000, 6);
  ASSERT_EQ(large.size(), 70000u);
  EXPECT_TRUE(std::adjacent_find(large.begin(), large.end(),
                                 [](uint32_t a, uint32_t b) { return a >= b; }) == large.end());
  EXPECT_EQ(drawIndices(1000, 20, 5), before);
  EXPECT_EQ(drawIndices(size_t{1} << 21, 70000, 6), large);
}

TEST(RandomK, RoughlyUniformInBothAlgorithms) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  const size_t numel = 64;
  for (size_t k : {size_t{2}, size_t{16}}) {  // Floyd (k*16 <= numel), then Algorithm S
    std::vector<int> hits(numel, 0);
    const int draws = 20000;
    for (int d = 0; d < draws; ++d) {
      for (uint32_t i : drawIndices(numel, k, rng())) ++hits[i];
    }
    double expect = static_cast<double>(draws) * static_cast<double>(k) / numel;
    for (size_t i = 0; i < numel; ++i) {
      EXPECT_NEAR(hits[i], expect, 6 * std::sqrt(expect)) << "k=" << k << " i=" << i;
    }
  }
}

TEST(RandomK, CompressorDependsOnContextOnly) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  std::vector<float> x = testing::makeInput(10000, testing::Dist::kNormal, &rng);
  std::vector<float> y = testing::makeInput(10000, testing::Dist::kNormal, &rng);
  RandomKCompressor c;
  SelectContext ctx;
  ctx.seed = seed;
  ctx.segment_id = 2;
  ctx.step = 5;
  SegmentData a, b, other;
  c.compress(x, 0.01, ctx, &a);
  c.compress(y, 0.01, ctx, &b);
  EXPECT_EQ(a.indices, b.indices);  // the receiver regenerates them without the data
  EXPECT_EQ(a.indices.size(), 100u);
  for (size_t j = 0; j < a.indices.size(); ++j) EXPECT_EQ(a.values[j], x[a.indices[j]]);
  ctx.step = 6;
  c.compress(x, 0.01, ctx, &other);
  EXPECT_NE(a.indices, other.indices);
}

}  // namespace
}  // namespace sparseps

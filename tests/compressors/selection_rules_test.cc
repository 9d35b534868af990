// The sparse selections with a rule of their own (the plain threshold, random-k), and
// determinism: the same context gives the same bytes, for every built-in compressor.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compressors/random_k.h"
#include "compressors/registry.h"
#include "tests/compressors/quantizer_util.h"

namespace sparseps {
namespace {

using testing::kSizes;
using testing::make;
using testing::mixedInput;
using testing::run;

TEST(PlainThreshold, ExactlyTheElementsAtOrAboveTheValue) {
  auto c = make("threshold:value=0.5");
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    std::vector<float> x = mixedInput(n, 600 + n);
    const float edge[] = {0.5f, -0.5f, std::nextafter(0.5f, 0.0f), -std::nextafter(0.5f, 0.0f),
                          std::nextafter(0.5f, 1.0f)};
    for (size_t j = 0; j < 5 && j < n; ++j) x[j * (n / 5)] = edge[j];
    SegmentData s = run(*c, x, {}, 0.001);
    EXPECT_FALSE(s.coded());
    EXPECT_FALSE(s.dense);
    EXPECT_FALSE(s.index_seed.has_value());
    EXPECT_EQ(s.numel, n);
    std::vector<uint32_t> want;
    for (size_t i = 0; i < n; ++i) {
      if (std::fabs(x[i]) >= 0.5f) want.push_back(static_cast<uint32_t>(i));
    }
    ASSERT_EQ(s.indices, want);
    ASSERT_EQ(s.values.size(), want.size());
    for (size_t j = 0; j < want.size(); ++j) ASSERT_EQ(s.values[j], x[want[j]]);
  }
}

TEST(RandomK, SeededDistinctSortedIndicesWithTheirValues) {
  auto c = make("randomk");
  struct Case {
    size_t n;
    double density;
  };
  for (Case k : {Case{1000, 0.1}, Case{37, 0.5}, Case{5003, 0.01}, Case{10, 0.05}, Case{8, 1.0}}) {
    SCOPED_TRACE(std::to_string(k.n) + " " + std::to_string(k.density));
    std::vector<float> x = mixedInput(k.n, 700 + k.n);
    const size_t want_k = std::max<size_t>(1, static_cast<size_t>(std::floor(k.n * k.density)));
    SelectContext ctx;
    ctx.seed = 9;
    ctx.segment_id = 4;
    std::vector<std::vector<uint32_t>> seen;
    for (uint64_t step = 0; step < 3; ++step) {
      ctx.step = step;
      SegmentData s = run(*c, x, ctx, k.density);
      EXPECT_FALSE(s.coded());
      EXPECT_FALSE(s.dense);
      ASSERT_TRUE(s.index_seed.has_value());
      ASSERT_EQ(s.indices.size(), want_k);
      for (size_t j = 0; j < s.indices.size(); ++j) {
        ASSERT_LT(s.indices[j], k.n);
        if (j > 0) {
          ASSERT_LT(s.indices[j - 1], s.indices[j]);
        }
        ASSERT_EQ(s.values[j], x[s.indices[j]]);
      }
      // The receiver's side of the contract: the seed regenerates the indices.
      std::vector<uint32_t> regenerated;
      randomKIndices(k.n, want_k, *s.index_seed, &regenerated);
      EXPECT_EQ(regenerated, s.indices);
      seen.push_back(s.indices);
    }
    if (want_k < k.n && k.n >= 37) {
      EXPECT_FALSE(seen[0] == seen[1] && seen[1] == seen[2]) << "steps draw the same indices";
    }
  }
}

// Same context, same bytes: every built-in, from two fresh instances (PowerSGD keeps
// state per instance).
TEST(Quantizers, SameContextGivesIdenticalBytes) {
  std::vector<float> x = mixedInput(600, 800);
  for (const std::string& name : compressorRegistry().names()) {
    SCOPED_TRACE(name);
    auto a = make(name), b = make(name);
    ASSERT_TRUE(a && b);
    SelectContext ctx;
    ctx.seed = 12345;
    ctx.segment_id = 6;
    ctx.step = 3;
    ctx.rows = 20;
    SegmentData sa = run(*a, x, ctx, 0.05), sb = run(*b, x, ctx, 0.05);
    EXPECT_EQ(sa.code, sb.code);
    EXPECT_EQ(sa.code_arg, sb.code_arg);
    EXPECT_EQ(sa.packed, sb.packed);
    ASSERT_EQ(sa.params.size(), sb.params.size());
    EXPECT_EQ(0, std::memcmp(sa.params.data(), sb.params.data(), 4 * sa.params.size()));
    EXPECT_EQ(sa.indices, sb.indices);
    ASSERT_EQ(sa.values.size(), sb.values.size());
    EXPECT_EQ(0, std::memcmp(sa.values.data(), sb.values.data(), 4 * sa.values.size()));
    EXPECT_TRUE(sa.index_seed == sb.index_seed);
    EXPECT_EQ(sa.dense, sb.dense);
  }
  // The stochastic ones draw from the context: another seed, other bytes.
  for (const char* name : {"qsgd", "terngrad", "natural"}) {
    SCOPED_TRACE(name);
    auto c = make(name);
    SelectContext ctx;
    ctx.seed = 1;
    SegmentData s1 = run(*c, x, ctx);
    ctx.seed = 2;
    SegmentData s2 = run(*c, x, ctx);
    EXPECT_NE(s1.packed, s2.packed);
  }
}
}  // namespace
}  // namespace sparseps

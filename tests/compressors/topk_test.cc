#include "compressors/topk.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "compressors/segment_spec.h"
#include "compressors/kernels/select_kernels.h"
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
    // 1024 and 2305: the smallest segments that take the sampled path, with a sample of
    // two runs and of four.
    for (size_t n : {size_t{1024}, size_t{2305}, size_t{65536}, size_t{300007}}) {
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

// x = base + delta, stored into base as the selection produces it (as a method's state
// update is), recording the ranges asked for.
class AddingVector final : public StreamedVector {
 public:
  AddingVector(std::vector<float>* base, const std::vector<float>& delta)
      : base_(base), delta_(delta) {}
  size_t size() const override { return base_->size(); }
  const float* produce(size_t begin, size_t end) override {
    ranges.emplace_back(begin, end);
    for (size_t j = begin; j < end; ++j) (*base_)[j] += delta_[j];
    return base_->data() + begin;
  }
  void peek(size_t begin, size_t end, float* out) const override {
    for (size_t j = begin; j < end; ++j) out[j - begin] = (*base_)[j] + delta_[j];
  }
  absl::Span<const float> whole() override { return *base_; }

  std::vector<std::pair<size_t, size_t>> ranges;

 private:
  std::vector<float>* base_;
  const std::vector<float>& delta_;
};

TEST_P(TopkTest, StreamedSelectionProducesEachElementOnceAndSelectsExactly) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  ExactTopkCompressor c(GetParam());
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kZeros, Dist::kRare}) {
    SCOPED_TRACE(testing::distName(dist));
    for (size_t n : {size_t{1}, size_t{1000}, size_t{4608}, size_t{65536}, size_t{300007}}) {
      for (double density : {0.0, 0.001, 0.01, 0.25, 1.0}) {
        std::vector<float> base = testing::makeInput(n, dist, &rng);
        // Mostly zeros stays mostly zeros: the delta touches what the input touches.
        std::vector<float> delta = testing::makeInput(n, Dist::kNormal, &rng);
        for (size_t j = 0; j < n; ++j) delta[j] = base[j] == 0.0f ? 0.0f : 0.5f * delta[j];
        std::vector<float> want_x(n);
        for (size_t j = 0; j < n; ++j) want_x[j] = base[j] + delta[j];

        AddingVector x(&base, delta);
        SegmentData out;
        c.compressStreamed(x, density, SelectContext{}, &out);
        SCOPED_TRACE("n=" + std::to_string(n) + " density=" + std::to_string(density));
        size_t next = 0;
        for (const auto& [begin, end] : x.ranges) {
          ASSERT_EQ(begin, next);
          ASSERT_GT(end, begin);
          ASSERT_LE(end - begin, kStreamChunk);
          next = end;
        }
        ASSERT_EQ(next, n) << "produce must cover the vector exactly once";
        ASSERT_EQ(base, want_x);
        EXPECT_EQ(out.indices, testing::referenceTopk(want_x, topkCount(n, density)));
        for (size_t t = 0; t < out.indices.size(); ++t) {
          ASSERT_TRUE(testing::sameBits(out.values[t], want_x[out.indices[t]]));
        }
      }
    }
  }
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

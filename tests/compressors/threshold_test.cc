#include "compressors/threshold.h"

#include <gtest/gtest.h>

#include "compressors/segment_spec.h"
#include "compressors/select_seed.h"
#include "compressors/topk.h"
#include "tests/compressors/test_util.h"

namespace sparseps {
namespace {

using testing::Dist;

std::vector<uint32_t> referenceAtLeast(const std::vector<float>& x, float thr) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (magnitudeKey(x[i]) >= magnitudeKey(thr)) out.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

// DGC's sample, written from its rule: about sample_ratio of the n elements but at least
// 2 / density of them, every stride-th from a start drawn in [0, stride) from the seed
// (select_seed.h's boundedRandom, the draw sender and tests share); its rank `top` is
// ceil(count * density), at least 1.
struct Sample {
  size_t start = 0, stride = 1, count = 0, top = 0;
};

Sample referenceSample(size_t n, double density, uint64_t bits,
                       const SampledThresholdOptions& options) {
  Sample out;
  if (n == 0) return out;
  const double by_ratio = std::ceil(static_cast<double>(n) * options.sample_ratio);
  const double at_least = std::ceil(2.0 / density);
  const double want = std::max(by_ratio, at_least);
  if (want < static_cast<double>(n)) {
    out.stride = n / static_cast<size_t>(want);
    uint64_t state = bits;
    out.start = static_cast<size_t>(boundedRandom(&state, out.stride));
  }
  for (size_t i = out.start; i < n; i += out.stride) ++out.count;
  out.top = static_cast<size_t>(std::ceil(static_cast<double>(out.count) * density));
  out.top = std::min(std::max<size_t>(out.top, 1), out.count);
  return out;
}

TEST(DgcSample, PlanIsTheRuleSample) {
  const SampledThresholdOptions options;
  for (size_t n : {1, 2, 7, 100, 199, 1000, 65537, 300007, 25600000}) {
    for (double density : {0.001, 0.01, 0.25, 1.0}) {
      for (uint64_t bits : {uint64_t{0}, uint64_t{12345}, ~uint64_t{0}}) {
        const DgcSamplePlan got = dgcSamplePlan(n, density, bits, options);
        const Sample want = referenceSample(n, density, bits, options);
        SCOPED_TRACE("n=" + std::to_string(n) + " density=" + std::to_string(density));
        EXPECT_EQ(got.start, want.start);
        EXPECT_EQ(got.stride, want.stride);
        EXPECT_EQ(got.count, want.count);
        EXPECT_EQ(got.top, want.top);
      }
    }
  }
  // At 1%, the sample is 1% of a large segment.
  EXPECT_EQ(referenceSample(1000000, 0.01, 7, options).stride, 100u);
}

// The DGC rule written plainly: sample as above, sort, filter with full passes.
struct RuleResult {
  std::vector<uint32_t> indices;
  float threshold = 0;
  int rounds = 0;
  bool exact = false;
};

RuleResult referenceRule(const std::vector<float>& x, double density, uint64_t bits,
                         const SampledThresholdOptions& options) {
  RuleResult out;
  size_t k = topkCount(x.size(), density);
  if (k == 0) return out;
  const Sample plan = referenceSample(x.size(), density, bits, options);
  std::vector<uint32_t> keys;
  for (size_t i = plan.start; i < x.size(); i += plan.stride) keys.push_back(magnitudeKey(x[i]));
  EXPECT_EQ(keys.size(), plan.count);
  std::sort(keys.begin(), keys.end(), std::greater<uint32_t>());
  float thr = keyToFloat(keys[plan.top - 1]);
  for (int round = 0; round < options.max_rounds; ++round) {
    out.indices = referenceAtLeast(x, thr);
    out.rounds = round + 1;
    if (static_cast<double>(out.indices.size()) > options.upper * static_cast<double>(k)) {
      std::vector<float> kept;
      for (uint32_t i : out.indices) kept.push_back(x[i]);
      std::vector<uint32_t> pos = testing::referenceTopk(kept, k);
      std::vector<uint32_t> top;
      for (uint32_t p : pos) top.push_back(out.indices[p]);
      out.indices = top;
      out.exact = true;
      break;
    }
    if (static_cast<double>(out.indices.size()) >= options.lower * static_cast<double>(k)) break;
    if (round + 1 < options.max_rounds) thr *= static_cast<float>(options.decay);
  }
  if (out.indices.size() > k) out.indices.resize(k);
  out.threshold = thr;
  return out;
}

class ThresholdTest : public ::testing::TestWithParam<SimdLevel> {};

TEST_P(ThresholdTest, FilterMatchesPlainLoop) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kAllEqual, Dist::kSpecial, Dist::kZeros}) {
    SCOPED_TRACE(testing::distName(dist));
    for (size_t n : {0, 1, 2, 7, 17, 64, 65, 129, 1000, 100003}) {
      std::vector<float> x = testing::makeInput(n, dist, &rng);
      for (float thr : {0.0f, -0.0f, 0.1f, -1.0f, 1.5f, 2.0f, 3.5f,
                        std::numeric_limits<float>::infinity()}) {
        std::vector<uint32_t> idx;
        std::vector<float> val;
        thresholdFilter(x, thr, &idx, &val, GetParam());
        ASSERT_EQ(idx, referenceAtLeast(x, thr)) << "n=" << n << " thr=" << thr;
        for (size_t j = 0; j < idx.size(); ++j) ASSERT_TRUE(testing::sameBits(val[j], x[idx[j]]));
      }
    }
  }
}

// The DGC rule, checked by what it must produce: with the threshold it reports, either the
// exact top-k (the > 1.3k branch) or the first min(k, count) of |x| >= threshold.
TEST_P(ThresholdTest, SampledFollowsDgcRule) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kAllEqual, Dist::kSpecial, Dist::kZeros}) {
    SCOPED_TRACE(testing::distName(dist));
    for (size_t n : {1, 2, 7, 100, 1000, 65537, 300007}) {
      std::vector<float> x = testing::makeInput(n, dist, &rng);
      for (double density : {0.001, 0.01, 0.25}) {
        size_t k = topkCount(n, density);
        std::vector<uint32_t> idx;
        std::vector<float> val;
        SampledThresholdResult r = sampledThreshold(x, density, rng(), &idx, &val, {}, GetParam());
        SCOPED_TRACE("n=" + std::to_string(n) + " density=" + std::to_string(density));
        ASSERT_EQ(r.k, k);
        ASSERT_EQ(r.count, idx.size());
        ASSERT_LE(r.count, k);
        ASSERT_GE(r.rounds, 1);
        ASSERT_LE(r.rounds, 10);
        if (r.exact) {
          ASSERT_EQ(idx, testing::referenceTopk(x, k));
        } else {
          std::vector<uint32_t> want = referenceAtLeast(x, r.threshold);
          if (want.size() > k) want.resize(k);
          ASSERT_EQ(idx, want);
          if (r.rounds < 10) {
            ASSERT_GE(static_cast<double>(r.count), 0.8 * static_cast<double>(k));
          }
        }
        for (size_t j = 0; j < idx.size(); ++j) ASSERT_TRUE(testing::sameBits(val[j], x[idx[j]]));
        if (dist == Dist::kNormal && n >= 65537) {  // a smooth distribution: one round suffices
          ASSERT_GE(static_cast<double>(r.count), 0.8 * static_cast<double>(k));
        }
      }
    }
  }
}

TEST_P(ThresholdTest, SampledEqualsPlainRule) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  SampledThresholdOptions plain;
  SampledThresholdOptions slow_decay;  // many rounds that stay among the candidates
  slow_decay.lower = 1.0;
  slow_decay.decay = 0.99f;
  SampledThresholdOptions far_decay;   // rounds that fall below the candidates
  far_decay.lower = 3.0;
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kSpecial, Dist::kZeros}) {
    SCOPED_TRACE(testing::distName(dist));
    for (size_t n : {1, 5, 300, 70001, 250007}) {
      std::vector<float> x = testing::makeInput(n, dist, &rng);
      for (double density : {0.001, 0.01, 0.3}) {
        for (const SampledThresholdOptions* o : {&plain, &slow_decay, &far_decay}) {
          uint64_t bits = rng();
          SCOPED_TRACE("n=" + std::to_string(n) + " density=" + std::to_string(density) +
                       " lower=" + std::to_string(o->lower));
          RuleResult want = referenceRule(x, density, bits, *o);
          std::vector<uint32_t> idx;
          std::vector<float> val;
          SampledThresholdResult r = sampledThreshold(x, density, bits, &idx, &val, *o, GetParam());
          ASSERT_EQ(idx, want.indices);
          ASSERT_TRUE(testing::sameBits(r.threshold, want.threshold));
          ASSERT_EQ(r.rounds, want.rounds);
          ASSERT_EQ(r.exact, want.exact);
          // The exact branch's top k among those passing is the segment's top k (what a
          // device selects there, compressors/cuda/sampled_plan.h).
          if (want.exact) {
            ASSERT_EQ(idx, testing::referenceTopk(x, topkCount(n, density)));
          }
        }
      }
    }
  }
}

TEST_P(ThresholdTest, SampledLowersThresholdWhenTooFewPass) {
  // Demanding at least 5k to pass makes the first threshold (~k pass) too high: it must be
  // lowered by 0.8 per round until 5k pass, and the result is then truncated to k.
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  std::vector<float> x = testing::makeInput(100000, Dist::kNormal, &rng);
  SampledThresholdOptions options;
  options.lower = 5.0;
  options.upper = 1e9;
  std::vector<uint32_t> idx;
  std::vector<float> val;
  SampledThresholdResult r = sampledThreshold(x, 0.01, rng(), &idx, &val, options, GetParam());
  EXPECT_EQ(r.k, 1000u);
  EXPECT_GE(r.rounds, 2);
  EXPECT_FALSE(r.exact);
  EXPECT_GE(referenceAtLeast(x, r.threshold).size(), 5000u);
  std::vector<uint32_t> want = referenceAtLeast(x, r.threshold);
  want.resize(1000);
  EXPECT_EQ(idx, want);
  EXPECT_EQ(r.count, 1000u);
}

TEST_P(ThresholdTest, SampledIsReproducibleFromSeed) {
  uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  std::vector<float> x = testing::makeInput(200000, Dist::kNormal, &rng);
  SampledThresholdCompressor c({}, GetParam());
  SelectContext ctx;
  ctx.seed = seed;
  ctx.segment_id = 3;
  ctx.step = 11;
  SegmentData a, b;
  c.compress(x, 0.001, ctx, &a);
  c.compress(x, 0.001, ctx, &b);
  EXPECT_EQ(a.indices, b.indices);
  // The sample starts where the context's seed says, at every step.
  for (uint64_t step : {11, 12, 13}) {
    ctx.step = step;
    SegmentData s;
    c.compress(x, 0.001, ctx, &s);
    std::vector<uint32_t> indices;
    std::vector<float> values;
    sampledThreshold(x, 0.001, selectSeed(ctx), &indices, &values);
    EXPECT_EQ(s.indices, indices) << "step " << step;
  }
  EXPECT_EQ(a.segment_id, 3u);
  EXPECT_EQ(a.numel, 200000u);
  EXPECT_FALSE(a.dense);
}

INSTANTIATE_TEST_SUITE_P(Levels, ThresholdTest, ::testing::ValuesIn(testing::usableLevels()),
                         [](const auto& info) { return std::string(simdLevelName(info.param)); });

}  // namespace
}  // namespace sparseps

// The quantizers signsgd, onebit, natural, qsgd and terngrad, each against a reference
// written here from the rule its header states; the packed bytes are read by
// code_reference.h's bit-by-bit decoder, never by the implementation's helpers. Inputs come
// from fixed seeds: every run checks the same cases.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "compressors/codes.h"
#include "tests/compressors/code_reference.h"
#include "tests/compressors/quantizer_util.h"

namespace sparseps {
namespace {

using testing::expectDecodesAgree;
using testing::expectRefusedAt;
using testing::expectZeroPadding;
using testing::kSizes;
using testing::make;
using testing::mixedInput;
using testing::refBitWidth;
using testing::refDecode;
using testing::refField;
using testing::run;

TEST(SignSgd, MeanMagnitudeTimesSignOneBitEach) {
  auto c = make("signsgd");
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    std::vector<float> x = mixedInput(n, 100 + n);
    SelectContext ctx;
    ctx.segment_id = 3;
    SegmentData s = run(*c, x, ctx);
    EXPECT_EQ(s.segment_id, 3u);
    EXPECT_EQ(s.numel, n);
    ASSERT_EQ(s.code, Code::kSign);
    EXPECT_EQ(s.code_arg, 0u);
    EXPECT_EQ(s.packed.size(), (n + 7) / 8);
    expectZeroPadding(s, 1);
    double l1 = 0;
    for (float v : x) l1 += std::fabs(double{v});
    const double scale = l1 / n;
    ASSERT_EQ(s.params.size(), 2u);
    const std::vector<double> dec = refDecode(s);
    for (size_t i = 0; i < n; ++i) {
      const double want = x[i] < 0 ? -scale : scale;  // sign(0) = sign(-0) = +1
      ASSERT_NEAR(dec[i], want, 1e-6 * scale) << "element " << i << " x=" << x[i];
      ASSERT_EQ(refField(s.packed, i, 1), x[i] < 0 ? 1u : 0u) << i;
    }
    expectDecodesAgree(s, 0);
  }
}

TEST(OneBit, PerRowMeansOfNonNegativeAndNegative) {
  auto c = make("onebit");
  struct Case {
    size_t n;
    uint32_t rows;
    size_t groups;
  };
  // rows dividing n: per row; unknown rows or rows not dividing n: one group.
  for (Case k : {Case{600, 20, 20}, Case{600, 600, 600}, Case{5003, 0, 1}, Case{100, 7, 1},
                 Case{1, 1, 1}, Case{64, 4, 4}}) {
    SCOPED_TRACE(std::to_string(k.n) + "x" + std::to_string(k.rows));
    std::vector<float> x = mixedInput(k.n, 200 + k.n);
    if (k.groups > 1) {  // a row without negatives and one without non-negatives
      const size_t len = k.n / k.groups;
      for (size_t i = 0; i < len; ++i) x[i] = std::fabs(x[i]) + 0.5f;
      for (size_t i = len; i < 2 * len; ++i) x[i] = -std::fabs(x[i]) - 0.5f;
    }
    SelectContext ctx;
    ctx.rows = k.rows;
    SegmentData s = run(*c, x, ctx);
    ASSERT_EQ(s.code, Code::kSign);
    ASSERT_EQ(s.params.size(), 2 * k.groups);
    expectZeroPadding(s, 1);
    const size_t len = k.n / k.groups;
    const std::vector<double> dec = refDecode(s);
    for (size_t g = 0; g < k.groups; ++g) {
      double pos = 0, neg = 0;
      size_t npos = 0, nneg = 0;
      for (size_t i = g * len; i < (g + 1) * len; ++i) {
        if (x[i] >= 0) {
          pos += x[i];
          ++npos;
        } else {
          neg += x[i];
          ++nneg;
        }
      }
      const double mpos = npos ? pos / npos : 0.0, mneg = nneg ? neg / nneg : 0.0;
      EXPECT_NEAR(s.params[2 * g], mpos, 1e-5 * std::fabs(mpos) + 1e-12) << "row " << g;
      EXPECT_NEAR(s.params[2 * g + 1], mneg, 1e-5 * std::fabs(mneg) + 1e-12) << "row " << g;
      for (size_t i = g * len; i < (g + 1) * len; ++i) {
        ASSERT_NEAR(dec[i], x[i] >= 0 ? mpos : mneg, 1e-5 * std::fabs(dec[i]) + 1e-12)
            << "element " << i;
      }
    }
    expectDecodesAgree(s, 0);
  }
}

// An infinity or a NaN (a diverged gradient) becomes exponent 255, which validation (the
// decoder's check) refuses naming the element, in the vector loop and in its tail.
TEST(Natural, NonFiniteInputMakesARefusedCode) {
  auto c = make("natural");
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    for (size_t at : {size_t{5}, size_t{40}, size_t{1002}}) {
      SCOPED_TRACE(::testing::Message() << bad << " at " << at);
      std::vector<float> x = mixedInput(1003, 77);
      x[at] = bad;
      expectRefusedAt(run(*c, x), at);
    }
  }
}

TEST(Natural, PowersOfTwoBracketingEachValue) {
  auto c = make("natural");
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    std::vector<float> x = mixedInput(n, 300 + n);
    if (n >= 9) {
      x[1] = 1e-40f;    // subnormal: 0 or 2^-126
      x[2] = -3e38f;    // largest exponent: saturates at 2^127
      x[3] = 0x1p-20f;  // a power of two stays
      x[4] = -0x1p100f;
    }
    for (uint64_t seed : {0, 1, 2}) {
      SelectContext ctx;
      ctx.seed = seed;
      SegmentData s = run(*c, x, ctx);
      ASSERT_EQ(s.code, Code::kNatural);
      EXPECT_TRUE(s.params.empty());
      EXPECT_EQ(s.packed.size(), (9 * n + 7) / 8);
      expectZeroPadding(s, 9);
      const std::vector<double> dec = refDecode(s);
      for (size_t i = 0; i < n; ++i) {
        const double a = std::fabs(double{x[i]});
        if (a == 0) {
          ASSERT_EQ(dec[i], 0.0) << i;
          continue;
        }
        double low;
        if (a < 0x1p-126) {
          low = 0;  // subnormal: 0 or 2^-126
        } else {
          int e;
          std::frexp(a, &e);
          low = std::ldexp(1.0, e - 1);  // 2^floor(log2 |x|)
        }
        const double high = low == 0 ? 0x1p-126 : std::min(2 * low, 0x1p127);
        const double m = std::fabs(dec[i]);
        ASSERT_TRUE(m == low || m == high) << "element " << i << " x=" << x[i] << " got " << dec[i];
        if (m != 0) {
          ASSERT_EQ(std::signbit(dec[i]), std::signbit(x[i])) << i;
        }
        if (a == low) {
          ASSERT_EQ(m, a) << "a power of two must not move, element " << i;
        }
      }
      if (n >= 9) {
        EXPECT_EQ(dec[2], -0x1p127);
        EXPECT_EQ(dec[3], 0x1p-20);
        EXPECT_EQ(dec[4], -0x1p100);
      }
      expectDecodesAgree(s, 0);
    }
  }
}

struct QsgdCase {
  std::string spec;
  uint32_t levels;
  uint32_t bucket;
  size_t n;
};

TEST(Qsgd, LevelsAreFloorOrCeilOfTheBucketNormScaledValue) {
  const QsgdCase cases[] = {
      {"qsgd", 16, 512, 5003},
      {"qsgd:levels=4,bucket=128", 4, 128, 1000},
      {"qsgd:levels=4,bucket=128", 4, 128, 1001},
      {"qsgd:levels=1,bucket=0", 1, 0, 777},
      {"qsgd:levels=7,bucket=3", 7, 3, 10},
      {"qsgd:levels=32767,bucket=64", 32767, 64, 300},
      {"qsgd:levels=255,bucket=1", 255, 1, 9},
      {"qsgd:levels=2", 2, 512, 1},
  };
  for (const QsgdCase& k : cases) {
    SCOPED_TRACE(k.spec + " n=" + std::to_string(k.n));
    auto c = make(k.spec);
    std::vector<float> x = mixedInput(k.n, 400 + k.n);
    // The buckets by codes.h's rule: B = ceil(n / bucket) of L = ceil(n / B) elements.
    const size_t B = k.bucket == 0 ? 1 : (k.n + k.bucket - 1) / k.bucket;
    const size_t L = (k.n + B - 1) / B;
    if (B > 2) std::fill(x.begin(), x.begin() + L, 0.0f);  // a bucket of zeros: norm 0
    std::vector<double> norm(B, 0.0);
    for (size_t i = 0; i < k.n; ++i) norm[i / L] += double{x[i]} * x[i];
    for (double& v : norm) v = std::sqrt(v);
    for (uint64_t seed : {0, 1}) {
      SelectContext ctx;
      ctx.seed = seed;
      SegmentData s = run(*c, x, ctx);
      ASSERT_EQ(s.code, Code::kQsgd);
      ASSERT_EQ(s.code_arg, k.levels);
      ASSERT_EQ(s.params.size(), B);
      const uint32_t b = refBitWidth(k.levels);
      expectZeroPadding(s, 1 + b);
      for (size_t j = 0; j < B; ++j) {
        ASSERT_NEAR(s.params[j], norm[j], 1e-5 * norm[j]) << "bucket " << j;
      }
      const std::vector<double> dec = refDecode(s);
      for (size_t i = 0; i < k.n; ++i) {
        const uint32_t f = refField(s.packed, i, 1 + b);
        const uint32_t level = f & ((1u << b) - 1);
        const bool negative = (f >> b) & 1;
        ASSERT_LE(level, k.levels) << i;
        const double nb = norm[i / L];
        const double t = nb > 0 ? std::fabs(double{x[i]}) * k.levels / nb : 0.0;
        // l in {floor(t), ceil(t)}, with room for t's float rounding at an integer.
        // The implementation's norm is a float sum (checked to 1e-5 above), so its t may
        // differ from this one by that much.
        const double eps = 1e-4 + 2e-5 * t;
        ASSERT_GE(level, std::floor(t - eps)) << "element " << i << " t=" << t;
        ASSERT_LE(level, std::ceil(t + eps)) << "element " << i << " t=" << t;
        if (level > 0) {
          ASSERT_EQ(negative, x[i] < 0) << "sign of element " << i;
        }
        const double want = (negative ? -1.0 : 1.0) * nb * level / k.levels;
        ASSERT_NEAR(dec[i], want, 2e-5 * std::fabs(want) + 1e-30) << "element " << i;
      }
      expectDecodesAgree(s);
    }
  }
}

// Values near 2^64, whose squares pass the float range, and values whose squares fall
// below the normal floats: the norm is still their norm (while it fits a float).
TEST(Qsgd, NormOfValuesWhoseSquaresLeaveTheFloatRange) {
  // One bucket of 20, and buckets of 7, 7 and 6 (codes.h's rule) with both in the first.
  for (auto [spec, first_bucket] : {std::pair<const char*, size_t>{"qsgd:levels=4,bucket=0", 20},
                                    {"qsgd:levels=4,bucket=8", 7}}) {
    SCOPED_TRACE(spec);
    auto c = make(spec);
    std::vector<float> x = mixedInput(20, 7);
    x[3] = 3e19f;  // 9e38 squared: past a float's 3.4e38
    x[4] = -2e19f;
    double sum = 0;
    for (size_t i = 0; i < first_bucket; ++i) sum += double{x[i]} * x[i];
    SelectContext ctx;
    SegmentData s = run(*c, x, ctx);
    ASSERT_FALSE(s.params.empty());
    EXPECT_TRUE(std::isfinite(s.params[0]));
    EXPECT_NEAR(s.params[0], std::sqrt(sum), 1e-6 * std::sqrt(sum));

    for (float& v : x) v *= 1e-40f;  // now 3e-21 and below: squares under 1e-41
    sum = 0;
    for (size_t i = 0; i < first_bucket; ++i) sum += double{x[i]} * x[i];
    s = run(*c, x, ctx);
    EXPECT_GT(s.params[0], 0.0f) << "a bucket of tiny values lost its norm";
    EXPECT_NEAR(s.params[0], std::sqrt(sum), 1e-5 * std::sqrt(sum));
  }
}

TEST(TernGrad, ZeroOrSignedMaxMagnitude) {
  auto c = make("terngrad");
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    std::vector<float> x = mixedInput(n, 500 + n);
    float maxabs = 0;
    for (float v : x) maxabs = std::max(maxabs, std::fabs(v));
    for (uint64_t seed : {0, 1, 2}) {
      SelectContext ctx;
      ctx.seed = seed;
      SegmentData s = run(*c, x, ctx);
      ASSERT_EQ(s.code, Code::kTernary);
      ASSERT_EQ(s.params.size(), 1u);
      EXPECT_EQ(s.params[0], maxabs);
      EXPECT_EQ(s.packed.size(), (2 * n + 7) / 8);
      expectZeroPadding(s, 2);
      const std::vector<double> dec = refDecode(s);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NE(refField(s.packed, i, 2), 3u) << i;
        if (dec[i] != 0) {
          ASSERT_EQ(std::fabs(dec[i]), maxabs) << i;
          ASSERT_EQ(dec[i] < 0, x[i] < 0) << "sign of element " << i;
        }
        if (x[i] == 0) {
          ASSERT_EQ(dec[i], 0.0) << i;
        }
      }
      expectDecodesAgree(s, 0);
    }
  }
  // All zeros: scale 0, nothing kept.
  SegmentData s = run(*c, std::vector<float>(33, 0.0f));
  EXPECT_EQ(s.params, std::vector<float>{0.0f});
  for (double v : refDecode(s)) EXPECT_EQ(v, 0.0);
}
}  // namespace
}  // namespace sparseps

// The casts fp16 and bf16 against round-to-nearest-even written here: every finite value
// of the 16-bit format, decoded by code_reference.h, searched for the nearest, ties to the
// even pattern, finite magnitudes beyond the largest saturating to it; infinities stay
// infinite (a diverged gradient must reach the decoder, which refuses it).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compressors/codes.h"
#include "compressors/kernels/half.h"
#include "tests/compressors/code_reference.h"
#include "tests/compressors/quantizer_util.h"

namespace sparseps {
namespace {

using testing::expectDecodesAgree;
using testing::expectRefusedAt;
using testing::make;
using testing::refBf16;
using testing::refDecode;
using testing::refHalf;
using testing::run;

// All finite non-negative values of a 16-bit format, in pattern order (which is value
// order), decoded by the reference; round-to-nearest-even is then a search in it.
struct Format16 {
  std::vector<double> values;  // values[p] for patterns p = 0 .. largest finite
  double max() const { return values.back(); }
  // Nearest representable to v, ties to the even pattern, magnitudes beyond max saturate.
  double round(double v) const {
    const double a = std::min(std::fabs(v), max());
    size_t hi = std::lower_bound(values.begin(), values.end(), a) - values.begin();
    size_t p = hi;
    if (values[hi] != a) {
      const double below = a - values[hi - 1], above = values[hi] - a;
      p = below < above ? hi - 1 : above < below ? hi : ((hi - 1) % 2 == 0 ? hi - 1 : hi);
    }
    return std::signbit(v) ? -values[p] : values[p];
  }
};

Format16 halfFormat() {
  Format16 f;
  for (uint32_t p = 0; p <= 0x7bff; ++p) f.values.push_back(refHalf(p));
  return f;
}

Format16 bf16Format() {
  Format16 f;
  for (uint32_t p = 0; p <= 0x7f7f; ++p) f.values.push_back(refBf16(p));
  return f;
}

// Normal values scaled across magnitudes 2^-30 .. max_scale (a half's subnormal range
// included); each test adds exact ties and saturating values.
std::vector<float> castInput(size_t n, uint64_t seed, float max_scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> log_scale(-30.0f, std::log2(max_scale));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = normal(rng) * std::exp2(log_scale(rng));
  return x;
}

TEST(Cast, Fp16RoundsToNearestEvenAndSaturates) {
  auto c = make("fp16");
  const Format16 half = halfFormat();
  EXPECT_EQ(half.max(), 65504.0);
  std::vector<float> x = castInput(5003, 31, 60000.0f);
  const std::vector<float> special = {0.0f,
                                      -0.0f,
                                      1.0f,
                                      -1.0f,
                                      1.0f + 0x1p-11f,  // tie between 1 and 1 + 2^-10: to even, 1
                                      1.0f + 3 * 0x1p-11f,  // tie: to even, 1 + 2^-9
                                      -(2.0f + 0x1p-10f),   // tie at 2: -2
                                      0x1p-24f,
                                      0x1p-25f,
                                      0x1.8p-24f,
                                      3e-8f,
                                      6e-5f,  // subnormal halves and ties among them
                                      65504.0f,
                                      65519.0f,
                                      -65519.0f,
                                      65520.0f,
                                      -65520.0f,
                                      1e6f,
                                      -1e6f,
                                      3e38f};
  std::copy(special.begin(), special.end(), x.begin() + 17);  // not at a multiple of 8
  SegmentData s = run(*c, x);
  ASSERT_EQ(s.code, Code::kF16);
  EXPECT_EQ(s.code_arg, 0u);
  EXPECT_TRUE(s.params.empty());
  EXPECT_EQ(s.packed.size(), 2 * x.size());
  EXPECT_TRUE(validateCoded(s, true).ok()) << validateCoded(s, true);
  const std::vector<double> dec = refDecode(s);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(dec[i], half.round(x[i])) << "element " << i << " x=" << x[i];
    if (std::fabs(x[i]) <= 65504.0f) {  // in range: the project's own rounding agrees
      ASSERT_EQ(dec[i], halfToFloat(floatToHalf(x[i]))) << "element " << i;
    }
  }
  EXPECT_EQ(dec[17 + 4], 1.0);
  EXPECT_EQ(dec[17 + 5], 1.0 + 0x1p-9);
  EXPECT_EQ(dec[17 + 6], -2.0);
  for (size_t j = 12; j < special.size(); ++j) {
    EXPECT_EQ(std::fabs(dec[17 + j]), 65504.0) << "x=" << special[j];
    EXPECT_EQ(std::signbit(dec[17 + j]), std::signbit(special[j]));
  }
  expectDecodesAgree(s, 0);
}

TEST(Cast, Bf16RoundsToNearestEvenAndSaturates) {
  auto c = make("bf16");
  const Format16 bf = bf16Format();
  std::vector<float> x = castInput(5003, 32, 1e30f);
  const float fmax = std::numeric_limits<float>::max();
  const std::vector<float> special = {0.0f,
                                      -0.0f,
                                      1.0f,
                                      1.0f + 0x1p-8f,      // tie between 1 and 1 + 2^-7: to even, 1
                                      1.0f + 3 * 0x1p-8f,  // tie: to even, 1 + 2^-6
                                      -(1.0f + 0x1p-8f + 0x1p-20f),  // just above the tie: away
                                      1e-40f,
                                      -1e-45f,  // f32 subnormals
                                      fmax,
                                      -fmax};
  std::copy(special.begin(), special.end(), x.begin() + 9);
  SegmentData s = run(*c, x);
  ASSERT_EQ(s.code, Code::kBf16);
  EXPECT_EQ(s.packed.size(), 2 * x.size());
  EXPECT_TRUE(validateCoded(s, false).ok()) << validateCoded(s, false);
  const std::vector<double> dec = refDecode(s);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(dec[i], bf.round(x[i])) << "element " << i << " x=" << x[i];
  }
  EXPECT_EQ(dec[9 + 3], 1.0);
  EXPECT_EQ(dec[9 + 4], 1.0 + 0x1p-6);
  EXPECT_EQ(dec[9 + 5], -(1.0 + 0x1p-7));
  for (size_t j = 8; j < special.size(); ++j) {
    EXPECT_EQ(std::fabs(dec[9 + j]), bf.max()) << "x=" << special[j];
    EXPECT_EQ(std::signbit(dec[9 + j]), std::signbit(special[j]));
  }
  expectDecodesAgree(s, 0);
}

// An infinity stays that infinity and a NaN stays a NaN (not an infinity, a zero or a
// finite value), whatever its payload, in the vector loops and in the tail: the bf16
// rounding must not carry high mantissa bits into the exponent or the sign, and a payload
// only in the low bits must stay a NaN once they are cut. Validation (the decoder's check)
// then refuses the segment, naming the element.
TEST(Cast, NonFiniteValuesStayNonFinite) {
  for (const char* spec : {"fp16", "bf16"}) {
    for (uint32_t pattern : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7fffffffu, 0xffffffffu,
                             0x7f800001u, 0xff800001u}) {
      float bad;
      std::memcpy(&bad, &pattern, sizeof bad);
      for (size_t at : {size_t{3}, size_t{16}, size_t{1002}}) {
        SCOPED_TRACE(::testing::Message() << spec << " 0x" << std::hex << pattern << std::dec
                                          << " at " << at);
        std::vector<float> x = castInput(1003, 33, 100.0f);
        x[at] = bad;
        const SegmentData s = run(*make(spec), x);
        const std::vector<double> dec = refDecode(s);
        if (std::isnan(bad)) {
          EXPECT_TRUE(std::isnan(dec[at]));
        } else {
          EXPECT_EQ(dec[at], static_cast<double>(bad));
        }
        EXPECT_TRUE(std::isfinite(dec[at == 3 ? 4 : 3]));
        expectRefusedAt(s, at);
      }
    }
  }
}

}  // namespace
}  // namespace sparseps

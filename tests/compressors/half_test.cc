#include "compressors/kernels/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tests/core/wire_random.h"

namespace sparseps {
namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(WireHalf, EveryHalfSurvivesFloatAndBack) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const uint16_t half = static_cast<uint16_t>(h);
    const float f = halfToFloat(half);
    if (halfIsNonFinite(half) && (half & 0x3ffu) != 0) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(halfIsNonFinite(floatToHalf(f))) << h;
      continue;
    }
    EXPECT_EQ(floatToHalf(f), half) << "half 0x" << std::hex << h;
  }
}

TEST(WireHalf, KnownValues) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00u);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000u);
  EXPECT_EQ(floatToHalf(kHalfMax), 0x7bffu);
  EXPECT_EQ(floatToHalf(65519.99f), 0x7bffu);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00u);  // tie rounds to even: infinity
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00u);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000u);
  EXPECT_EQ(floatToHalf(5.9604644775390625e-8f), 0x0001u);  // smallest subnormal
  EXPECT_EQ(floatToHalf(2.98023223876953125e-8f), 0x0000u);  // half of it: tie to even 0
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00u);       // tie to even, down
  EXPECT_EQ(floatToHalf(1.0f + 3.0f / 2048), 0x3c02u);       // tie to even, up
  EXPECT_TRUE(halfIsNonFinite(floatToHalf(std::nanf(""))));
  EXPECT_NE(floatToHalf(std::nanf("")) & 0x3ffu, 0u);
  EXPECT_TRUE(fitsHalf(65519.0f));
  EXPECT_FALSE(fitsHalf(65520.0f));
}

// Reference: the nearest half by brute force over the two neighbours, ties to even.
uint16_t nearestHalf(float f) {
  const float a = std::fabs(f);
  uint16_t lo = 0;
  // Largest finite half magnitude <= a by binary search over the ordered bit patterns.
  uint16_t hi = 0x7bff;
  if (a >= halfToFloat(hi)) {
    lo = hi;
  } else {
    uint16_t l = 0, r = hi;  // halfToFloat(l) <= a < halfToFloat(r)
    while (r - l > 1) {
      const uint16_t m = static_cast<uint16_t>((l + r) / 2);
      if (halfToFloat(m) <= a) l = m; else r = m;
    }
    lo = l;
  }
  const uint16_t up = static_cast<uint16_t>(lo + 1);  // 0x7c00 (infinity) above the max
  const double below = a - static_cast<double>(halfToFloat(lo));
  const double above = (up == 0x7c00 ? 65536.0 : static_cast<double>(halfToFloat(up))) - a;
  uint16_t pick = below < above ? lo : (above < below ? up : ((lo & 1u) ? up : lo));
  const uint16_t sign = static_cast<uint16_t>((bitsOf(f) >> 16) & 0x8000u);
  return static_cast<uint16_t>(sign | pick);
}

TEST(WireHalf, RoundsToNearestEvenOnRandomFloats) {
  const uint64_t seed = wire_test::freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint32_t> bits(0, 0x477fffffu);  // every finite float below 65536
  for (int i = 0; i < 200000; ++i) {
    uint32_t b = bits(rng) | (i % 2 ? 0x80000000u : 0u);
    float f;
    std::memcpy(&f, &b, 4);
    ASSERT_EQ(floatToHalf(f), nearestHalf(f)) << "float bits 0x" << std::hex << b;
  }
}

}  // namespace
}  // namespace sparseps

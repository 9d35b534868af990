#include "core/wire/wire_varint.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/core/wire_random.h"

namespace sparseps::wire {
namespace {

TEST(WireVarint, RoundTripsBoundariesAndRandomValues) {
  const uint64_t seed = wire_test::freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> values = {0, 1, 127, 128, 16383, 16384, (1u << 21) - 1, 1u << 21,
                                  (1u << 28) - 1, 1u << 28, 0xffffffffu};
  for (int i = 0; i < 10000; ++i) values.push_back(static_cast<uint32_t>(rng()) >> (rng() % 32));
  for (uint32_t v : values) {
    uint8_t buffer[kMaxVarintBytes];
    const size_t n = putVarint(buffer, v);
    ASSERT_EQ(n, varintBytes(v)) << v;
    const uint8_t* p = buffer;
    uint32_t back = 0;
    ASSERT_EQ(getVarint(&p, buffer + n, &back), VarintResult::kOk) << v;
    EXPECT_EQ(back, v);
    EXPECT_EQ(p, buffer + n);
    // Any shorter buffer is truncated, and leaves the cursor where it was.
    const uint8_t* q = buffer;
    EXPECT_EQ(getVarint(&q, buffer + n - 1, &back), VarintResult::kTruncated) << v;
    EXPECT_EQ(q, buffer);
  }
  EXPECT_EQ(varintBytes(127), 1u);
  EXPECT_EQ(varintBytes(128), 2u);
  EXPECT_EQ(varintBytes(0xffffffffu), 5u);
}

TEST(WireVarint, RejectsMoreThan32Bits) {
  for (std::vector<uint8_t> bytes : {std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 0x10},
                                     std::vector<uint8_t>{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}}) {
    const uint8_t* p = bytes.data();
    uint32_t value = 0;
    EXPECT_EQ(getVarint(&p, bytes.data() + bytes.size(), &value), VarintResult::kOverflow);
  }
}

}  // namespace
}  // namespace sparseps::wire

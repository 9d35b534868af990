// Bytes per nonzero of every encoding on a 1M-element segment with uniformly random
// indices: a size property, so it is asserted (no timing here). The table is printed.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "core/wire/wire.h"
#include "tests/core/wire_random.h"

namespace sparseps {
namespace {

TEST(WireSize, BytesPerNonzeroOnAMillionElements) {
  const uint64_t seed = wire_test::freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr uint32_t kNumel = 1000000;
  std::printf("%-9s %9s", "density", "nonzeros");
  for (Encoding e : kFloatEncodings) std::printf(" %17s", encodingName(e));
  std::printf("   (bytes per nonzero, 13-byte segment header included)\n");
  for (double density : {0.0001, 0.001, 0.01, 0.1, 0.5, 1.0}) {
    const SegmentData segment = wire_test::randomSparse(0, kNumel, density, rng);
    const double k = static_cast<double>(segment.nonzeros());
    std::printf("%-9g %9zu", density, segment.nonzeros());
    for (Encoding e : kFloatEncodings) {
      const size_t bytes = encodedBytes(segment, e);
      EXPECT_LE(bytes, maxEncodedBytes(kNumel)) << encodingName(e);
      std::printf(" %17.3f", static_cast<double>(bytes) / k);
      // The estimate is the size the encoder really writes (kDenseF32: of the densified
      // segment, which is what would travel).
      EncodeOptions options = EncodeOptions().allowF16(true);
      if (e != Encoding::kDenseF32) options.force(e);
      absl::StatusOr<std::vector<uint8_t>> message = encodeMessage(
          MessageHeader{}, {e == Encoding::kDenseF32 ? wire_test::asDense(segment) : segment}, options);
      ASSERT_TRUE(message.ok()) << message.status();
      EXPECT_EQ(message->size(), kHeaderBytes + bytes) << encodingName(e);
      // ... and the reader takes exactly those bytes back.
      absl::StatusOr<DecodedMessage> decoded =
          decodeMessage(*message, DecodeLimits().allow(0, kNumel).values(ValueCheck::kAny));
      ASSERT_TRUE(decoded.ok()) << encodingName(e) << ": " << decoded.status();
      EXPECT_EQ(decoded->segments.at(0).nonzeros(),
                e == Encoding::kDenseF32 ? kNumel : segment.nonzeros())
          << encodingName(e);
    }
    std::printf("\n");
    EXPECT_EQ(encodedBytes(segment, Encoding::kIndexValueF32), kSegmentHeaderBytes + 8 * segment.nonzeros());
    if (density == 0.001) {
      EXPECT_LT(encodedBytes(segment, Encoding::kDeltaVarintF16) / k, 4.0);
      EXPECT_LT(encodedBytes(segment, Encoding::kDeltaVarintF32) / k, 6.0);
    }
  }
}

}  // namespace
}  // namespace sparseps

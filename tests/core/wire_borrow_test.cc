// A receiver that asks to borrow (DecodeLimits::borrowDense) gets dense segments that point
// into the payload instead of copies: the same values, the same checks, and a copy of such
// a segment owns its values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compressors/apply.h"
#include "core/wire/wire.h"
#include "tests/core/wire_random.h"

namespace sparseps {
namespace {

using wire_test::freshSeed;
using wire_test::randomDense;
using wire_test::randomSparse;

// A dense segment of a size that spans several of the decoder's chunks, a sparse one, and
// a dense one of one element; the 13-byte segment headers leave the dense bodies at
// different alignments.
struct Sent {
  std::vector<SegmentData> segments;
  std::vector<uint8_t> bytes;
  DecodeLimits limits;
};

Sent sendMixed(std::mt19937_64& rng) {
  Sent sent;
  sent.segments.push_back(randomDense(0, 70001, rng));
  sent.segments.push_back(randomSparse(1, 5000, 0.01, rng));
  sent.segments.push_back(randomDense(2, 1, rng));
  for (const SegmentData& s : sent.segments) sent.limits.allow(s.segment_id, s.numel);
  sent.limits.borrowDense(true);
  sent.bytes = *encodeMessage(MessageHeader{}, sent.segments);
  return sent;
}

// The floats a segment stands for, read back byte by byte (no borrowed-aware helper).
std::vector<float> floatsOf(const SegmentData& s) {
  if (s.borrowed == nullptr) return s.values;
  std::vector<float> out(s.numel);
  for (size_t i = 0; i < out.size(); ++i) std::memcpy(&out[i], s.borrowed + 4 * i, 4);
  return out;
}

TEST(WireBorrow, DenseSegmentsPointIntoThePayloadAndHoldTheSentValues) {
  const uint64_t seed = freshSeed();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const Sent sent = sendMixed(rng);
  absl::StatusOr<DecodedMessage> got = decodeMessage(sent.bytes, sent.limits);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->segments.size(), 3u);
  const uint8_t* begin = sent.bytes.data();
  const uint8_t* end = begin + sent.bytes.size();
  for (size_t i : {size_t{0}, size_t{2}}) {
    const SegmentData& s = got->segments[i];
    ASSERT_TRUE(s.dense);
    ASSERT_NE(s.borrowed, nullptr);
    EXPECT_TRUE(s.values.empty());
    EXPECT_GE(s.borrowed, begin);
    EXPECT_LE(s.borrowed + 4 * size_t{s.numel}, end);
    EXPECT_EQ(floatsOf(s), sent.segments[i].values);
  }
  const SegmentData& sparse = got->segments[1];
  EXPECT_EQ(sparse.borrowed, nullptr);
  EXPECT_EQ(sparse.indices, sent.segments[1].indices);
  EXPECT_EQ(sparse.values, sent.segments[1].values);
}

TEST(WireBorrow, ACopyOwnsItsValuesAfterTheBufferIsGone) {
  std::mt19937_64 rng(7);
  Sent sent = sendMixed(rng);
  std::vector<SegmentData> kept;
  {
    absl::StatusOr<DecodedMessage> got = decodeMessage(sent.bytes, sent.limits);
    ASSERT_TRUE(got.ok()) << got.status();
    kept = got->segments;  // copy-assigned
    SegmentData constructed(got->segments[0]);
    EXPECT_EQ(constructed.borrowed, nullptr);
    EXPECT_EQ(constructed.values, sent.segments[0].values);
  }
  std::fill(sent.bytes.begin(), sent.bytes.end(), 0xFF);
  sent.bytes.clear();
  sent.bytes.shrink_to_fit();
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].borrowed, nullptr);
    EXPECT_EQ(kept[i].values, sent.segments[i].values) << "segment " << i;
  }
}

TEST(WireBorrow, ReencodingABorrowedMessageGivesTheSameBytes) {
  std::mt19937_64 rng(11);
  const Sent sent = sendMixed(rng);
  absl::StatusOr<DecodedMessage> got = decodeMessage(sent.bytes, sent.limits);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<std::vector<uint8_t>> again = encodeMessage(MessageHeader{}, got->segments);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, sent.bytes);
}

TEST(WireBorrow, ABorrowingDecodeRefusesWhatACopyingOneRefuses) {
  std::mt19937_64 rng(13);
  const Sent sent = sendMixed(rng);
  const size_t first_value = kHeaderBytes + kSegmentHeaderBytes;
  {  // a flipped bit: the checksum
    std::vector<uint8_t> bad = sent.bytes;
    bad[first_value + 4 * 123] ^= 0x10;
    absl::StatusOr<DecodedMessage> got = decodeMessage(bad, sent.limits);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
  }
  {  // a NaN with a matching checksum: the value check
    std::vector<SegmentData> segments = sent.segments;
    segments[0].values[40000] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<uint8_t> bad = *encodeMessage(MessageHeader{}, segments);
    for (bool borrow : {false, true}) {
      DecodeLimits limits = sent.limits;
      limits.borrowDense(borrow);
      absl::StatusOr<DecodedMessage> got = decodeMessage(bad, limits);
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(got.status().message().find("40000"), std::string::npos) << got.status();
    }
  }
}

TEST(WireBorrow, AReusedSlotForgetsWhatItBorrowed) {
  std::mt19937_64 rng(17);
  const Sent sent = sendMixed(rng);
  std::vector<SegmentData> slots;
  ASSERT_TRUE(decodePayload(*decodeHeader(sent.bytes),
                            absl::MakeConstSpan(sent.bytes).subspan(kHeaderBytes), sent.limits,
                            &slots)
                  .ok());
  ASSERT_NE(slots[0].borrowed, nullptr);
  DecodeLimits copying = sent.limits;
  copying.borrowDense(false);
  ASSERT_TRUE(decodePayload(*decodeHeader(sent.bytes),
                            absl::MakeConstSpan(sent.bytes).subspan(kHeaderBytes), copying, &slots)
                  .ok());
  EXPECT_EQ(slots[0].borrowed, nullptr);
  EXPECT_EQ(slots[0].values, sent.segments[0].values);
}

// scatterAdd and copyDense read borrowed values at every alignment as they read owned ones.
TEST(WireBorrow, ApplyReadsBorrowedValuesAtAnyAlignment) {
  std::mt19937_64 rng(19);
  std::normal_distribution<float> normal;
  constexpr size_t kN = 1037;
  std::vector<float> x(kN), y0(kN);
  for (size_t i = 0; i < kN; ++i) {
    x[i] = normal(rng);
    y0[i] = normal(rng);
  }
  std::vector<uint8_t> storage(4 * kN + 8);
  for (size_t offset = 0; offset < 4; ++offset) {
    SCOPED_TRACE(::testing::Message() << "offset " << offset);
    std::memcpy(storage.data() + offset, x.data(), 4 * kN);
    SegmentData s;
    s.numel = kN;
    s.dense = true;
    s.borrowed = storage.data() + offset;
    std::vector<float> y = y0;
    scatterAdd(absl::MakeSpan(y), s, -0.5f);
    for (size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], y0[i] + -0.5f * x[i]) << i;
    copyDense(s, absl::MakeSpan(y));
    EXPECT_EQ(y, x);
  }
}

}  // namespace
}  // namespace sparseps

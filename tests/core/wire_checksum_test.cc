// The payload checksum (XXH3-64, low 32 bits) and the decoder paths that take it while
// they copy: large dense bodies (streamed), buffers reused across messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/wire/wire.h"
#include "tests/core/wire_random.h"

namespace sparseps {
namespace {

using ::testing::HasSubstr;
using wire_test::freshSeed;
using wire_test::randomDense;
using wire_test::randomSparse;

TEST(PayloadChecksum, IsXxh3OfThePayload) {
  // XXH3-64 of the empty input, seed 0, is 0x2D06800538D394C2 (xxHash's own test vector).
  EXPECT_EQ(payloadChecksum({}), 0x38D394C2u);
  PayloadChecksum empty;
  EXPECT_EQ(empty.value(), 0x38D394C2u);
}

TEST(PayloadChecksum, AnySplitGivesTheOneShotValue) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(300000);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (int trial = 0; trial < 20; ++trial) {
    PayloadChecksum streamed;
    size_t done = 0;
    while (done < bytes.size()) {
      const size_t piece = std::min<size_t>(bytes.size() - done, rng() % 70000);
      streamed.add(bytes.data() + done, piece);
      done += piece;
    }
    EXPECT_EQ(streamed.value(), payloadChecksum(bytes));
  }
  std::vector<uint8_t> changed = bytes;
  changed[123456] ^= 0x10;
  EXPECT_NE(payloadChecksum(changed), payloadChecksum(bytes));
}

// Two dense segments larger than the streaming threshold, the second starting at an odd
// offset of the message, around a sparse one.
std::vector<SegmentData> largeMessage(std::mt19937_64& rng) {
  return {randomDense(0, 1500001, rng), randomSparse(1, 1000, 0.1, rng),
          randomDense(2, 1200007, rng)};
}

DecodeLimits largeLimits() { return DecodeLimits().allow(0, 1500001).allow(1, 1000).allow(2, 1200007); }

TEST(WireLargeDense, RoundTripsExactly) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const std::vector<SegmentData> sent = largeMessage(rng);
  absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(MessageHeader{}, sent);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<DecodedMessage> got = decodeMessage(*m, largeLimits());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->segments.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(got->segments[i].dense, sent[i].dense);
    EXPECT_EQ(got->segments[i].indices, sent[i].indices);
    EXPECT_EQ(got->segments[i].values, sent[i].values);
  }
  EXPECT_EQ(got->header.payload_checksum,
            payloadChecksum(absl::MakeConstSpan(*m).subspan(kHeaderBytes)));
}

TEST(WireLargeDense, AFlippedBitAnywhereIsDataLoss) {
  std::mt19937_64 rng(7);
  absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(MessageHeader{}, largeMessage(rng));
  ASSERT_TRUE(m.ok());
  for (size_t at : {kHeaderBytes + 20, m->size() / 2, m->size() - 3}) {
    std::vector<uint8_t> bad = *m;
    bad[at] ^= 0x04;
    absl::StatusOr<DecodedMessage> got = decodeMessage(bad, largeLimits());
    ASSERT_FALSE(got.ok()) << "byte " << at;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("checksum mismatch"));
  }
}

TEST(WireLargeDense, NamesTheElementThatIsNotFinite) {
  std::mt19937_64 rng(8);
  std::vector<SegmentData> segments = largeMessage(rng);
  segments[2].values[1199999] = -INFINITY;
  absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(MessageHeader{}, segments);
  ASSERT_TRUE(m.ok());
  absl::StatusOr<DecodedMessage> got = decodeMessage(*m, largeLimits());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("non-finite value -inf at element 1199999"));
}

TEST(WireReuse, BuffersCarryNothingOverBetweenMessages) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const DecodeLimits limits = DecodeLimits().allow(0, 5000).allow(1, 300);
  std::vector<uint8_t> message;
  std::vector<SegmentData> decoded;
  // Dense, then sparse, then fewer segments, then dense again: each decode must give
  // exactly what was sent, whatever the reused buffers held before.
  const std::vector<std::vector<SegmentData>> stream = {
      {randomDense(0, 5000, rng), randomDense(1, 300, rng)},
      {randomSparse(0, 5000, 0.01, rng), randomSparse(1, 300, 0.5, rng)},
      {randomSparse(1, 300, 0.1, rng)},
      {randomDense(1, 300, rng), randomSparse(0, 5000, 0.2, rng)},
  };
  for (const std::vector<SegmentData>& sent : stream) {
    ASSERT_TRUE(encodeMessage(MessageHeader{}, sent, EncodeOptions{}, &message).ok());
    EXPECT_EQ(message, *encodeMessage(MessageHeader{}, sent));
    absl::StatusOr<MessageHeader> header = decodeHeader(message);
    ASSERT_TRUE(header.ok());
    ASSERT_TRUE(decodePayload(*header, absl::MakeConstSpan(message).subspan(kHeaderBytes), limits,
                              &decoded)
                    .ok());
    ASSERT_EQ(decoded.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i) {
      EXPECT_EQ(decoded[i].segment_id, sent[i].segment_id);
      EXPECT_EQ(decoded[i].dense, sent[i].dense);
      EXPECT_EQ(decoded[i].indices, sent[i].indices);
      EXPECT_EQ(decoded[i].values, sent[i].values);
    }
  }
}

}  // namespace
}  // namespace sparseps

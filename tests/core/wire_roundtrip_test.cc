#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "core/wire/wire.h"
#include "compressors/kernels/half.h"
#include "tests/core/wire_random.h"

namespace sparseps {
namespace {

using wire_test::asDense;
using wire_test::densify;
using wire_test::freshSeed;
using wire_test::randomDense;
using wire_test::randomSparse;

// Segment sizes: a large one, one whose bitmap has padding bits, a single element.
constexpr uint32_t kNumels[] = {100003, 13, 1};

DecodeLimits limitsFor(const std::vector<SegmentData>& segments) {
  DecodeLimits limits;
  for (const SegmentData& s : segments) limits.allow(s.segment_id, s.numel);
  return limits;
}

// |decoded - sent| within half precision: half an ulp of a half, relative for normal
// halves (2^-11), absolute for subnormal ones (2^-25).
void expectWithinHalf(float sent, float got) {
  const float bound = std::max(std::fabs(sent) * 0x1p-11f, 0x1p-25f);
  EXPECT_LE(std::fabs(sent - got), bound) << "sent " << sent << " got " << got;
}

class WireRoundTrip : public ::testing::TestWithParam<std::tuple<Encoding, double>> {};

TEST_P(WireRoundTrip, DecodesWhatWasSent) {
  const auto [encoding, density] = GetParam();
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<SegmentData> sent;
  // kDenseF32 carries dense segments: the same random data, densified.
  const bool dense_case = encoding == Encoding::kDenseF32;
  for (uint32_t i = 0; i < std::size(kNumels); ++i) {
    const SegmentData s = randomSparse(2 * i + 1, kNumels[i], density, rng);
    sent.push_back(dense_case ? asDense(s) : s);
  }
  sent.push_back(randomDense(4, 37, rng));  // a dense segment rides along, always dense

  MessageHeader header;
  header.kind = MessageKind::kPush;
  header.sender_rank = 3;
  header.worker_step = 12345;
  header.model_version = 678;
  header.learning_rate = 0.1f;
  EncodeOptions options = EncodeOptions().allowF16(true);
  if (!dense_case) options.force(encoding);
  absl::StatusOr<std::vector<uint8_t>> message = encodeMessage(header, sent, options);
  ASSERT_TRUE(message.ok()) << message.status();

  size_t expected_bytes = kHeaderBytes;
  for (const SegmentData& s : sent) {
    expected_bytes += encodedBytes(s, s.dense ? Encoding::kDenseF32 : encoding);
    for (Encoding e : kFloatEncodings) EXPECT_LE(encodedBytes(s, e), maxEncodedBytes(s.numel));
  }
  EXPECT_EQ(message->size(), expected_bytes);

  absl::StatusOr<DecodedMessage> decoded = decodeMessage(*message, limitsFor(sent));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->header.kind, MessageKind::kPush);
  EXPECT_EQ(decoded->header.worker_step, 12345u);
  EXPECT_EQ(decoded->header.segment_count, sent.size());
  ASSERT_EQ(decoded->segments.size(), sent.size());
  for (size_t s = 0; s < sent.size(); ++s) {
    const SegmentData& a = sent[s];
    const SegmentData& b = decoded->segments[s];
    EXPECT_EQ(b.segment_id, a.segment_id);
    EXPECT_EQ(b.numel, a.numel);
    EXPECT_EQ(b.dense, a.dense);  // the dense flag survives, whatever the density
    if (!a.dense) {
      EXPECT_EQ(b.indices, a.indices);
    }
    const std::vector<float> want = densify(a);
    const std::vector<float> got = densify(b);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      if (encoding == Encoding::kDeltaVarintF16 && !a.dense) {
        expectWithinHalf(want[i], got[i]);
      } else {
        ASSERT_EQ(got[i], want[i]) << "segment " << a.segment_id << " element " << i;
      }
    }
  }
  // The scan that checks the values also finds the largest magnitude the payload carries
  // and the sum of the squares of its values.
  float largest = -1;
  double squares = -1;
  std::vector<SegmentData> again;
  ASSERT_TRUE(decodePayload(decoded->header, absl::MakeConstSpan(*message).subspan(kHeaderBytes),
                            limitsFor(sent), &again, &largest, &squares)
                  .ok());
  float want_largest = 0;
  double want_squares = 0;
  for (const SegmentData& b : decoded->segments) {
    for (float v : densify(b)) {
      want_largest = std::max(want_largest, std::fabs(v));
      want_squares += static_cast<double>(v) * v;
    }
  }
  EXPECT_EQ(largest, want_largest);
  EXPECT_NEAR(squares, want_squares, 1e-5 * want_squares);  // float lanes, summed in double
}

INSTANTIATE_TEST_SUITE_P(
    EncodingsAndDensities, WireRoundTrip,
    ::testing::Combine(::testing::ValuesIn(kFloatEncodings),
                     ::testing::Values(0.0001, 0.001, 0.01, 0.1, 0.5, 1.0)),
    [](const ::testing::TestParamInfo<WireRoundTrip::ParamType>& info) {
      std::string density = std::to_string(std::get<1>(info.param));
      for (char& c : density) if (c == '.') c = '_';
      return std::string(encodingName(std::get<0>(info.param))) + "_" + density;
    });

TEST(WireEncoder, PicksTheSmallestEncoding) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (bool allow_f16 : {false, true}) {
    for (double density : {0.0001, 0.001, 0.01, 0.1, 0.3, 0.5, 0.9, 1.0}) {
      SCOPED_TRACE(::testing::Message() << "density " << density << " f16 " << allow_f16);
      const SegmentData segment = randomSparse(0, 50000, density, rng);
      size_t smallest = SIZE_MAX;  // over the sparse encodings: a sparse segment stays sparse
      for (Encoding e : kFloatEncodings) {
        if (e == Encoding::kDenseF32 || (e == Encoding::kDeltaVarintF16 && !allow_f16)) continue;
        smallest = std::min(smallest, encodedBytes(segment, e));
      }
      absl::StatusOr<std::vector<uint8_t>> message =
          encodeMessage(MessageHeader{}, {segment}, EncodeOptions().allowF16(allow_f16));
      ASSERT_TRUE(message.ok()) << message.status();
      EXPECT_EQ(message->size(), kHeaderBytes + smallest);
      const Encoding chosen = static_cast<Encoding>((*message)[kHeaderBytes]);
      EXPECT_EQ(encodedBytes(segment, chosen), smallest) << encodingName(chosen);
      if (!allow_f16) {
        EXPECT_NE(chosen, Encoding::kDeltaVarintF16);
      }
    }
  }
}

TEST(WireEncoder, ExpectedChoicesAtTheExtremes) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  auto chosen = [](const SegmentData& s, const EncodeOptions& o) {
    absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(MessageHeader{}, {s}, o);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? static_cast<Encoding>((*m)[kHeaderBytes]) : Encoding::kDenseF32;
  };
  EXPECT_EQ(chosen(randomSparse(0, 1 << 20, 0.001, rng), {}), Encoding::kDeltaVarintF32);
  EXPECT_EQ(chosen(randomSparse(0, 1 << 20, 0.001, rng), EncodeOptions().allowF16(true)),
            Encoding::kDeltaVarintF16);
  EXPECT_EQ(chosen(randomSparse(0, 1 << 16, 0.5, rng), {}), Encoding::kBitmapF32);
  EXPECT_EQ(chosen(randomSparse(0, 1 << 16, 1.0, rng), {}), Encoding::kBitmapF32);
  EXPECT_EQ(chosen(randomDense(0, 1000, rng), {}), Encoding::kDenseF32);
  EXPECT_EQ(chosen(randomDense(0, 1000, rng), EncodeOptions().force(Encoding::kIndexValueF32)),
            Encoding::kDenseF32);
  // A value beyond the half range: the automatic choice falls back to f32 values.
  SegmentData big = randomSparse(0, 1 << 20, 0.001, rng);
  big.values[0] = 1e6f;
  EXPECT_EQ(chosen(big, EncodeOptions().allowF16(true)), Encoding::kDeltaVarintF32);
}

TEST(WireHeader, RoundTripsEveryField) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (MessageKind kind :
       {MessageKind::kPush, MessageKind::kReply, MessageKind::kModel, MessageKind::kShutdown}) {
    MessageHeader h;
    h.kind = kind;
    h.sender_rank = static_cast<uint32_t>(rng());
    h.shard = static_cast<uint32_t>(rng());
    h.worker_step = rng();
    h.model_version = rng();
    h.learning_rate = std::uniform_real_distribution<float>(-10.0f, 10.0f)(rng);
    h.flags = static_cast<uint32_t>(rng());
    h.segment_count = static_cast<uint32_t>(rng() % 1000);
    h.payload_bytes = h.segment_count * kSegmentHeaderBytes + rng() % 100000;
    h.payload_checksum = static_cast<uint32_t>(rng());
    const std::array<uint8_t, kHeaderBytes> bytes = encodeHeader(h);
    absl::StatusOr<MessageHeader> back = decodeHeader(bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, h) << messageKindName(h.kind);
    absl::StatusOr<size_t> payload = payloadBytesFromHeader(bytes);
    ASSERT_TRUE(payload.ok()) << payload.status();
    EXPECT_EQ(*payload, h.payload_bytes);
  }
}

TEST(WireHeader, IsLittleEndianAtDocumentedOffsets) {
  MessageHeader h;
  h.kind = MessageKind::kReply;
  h.worker_step = 0x0102030405060708ull;
  const std::array<uint8_t, kHeaderBytes> b = encodeHeader(h);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "SPPS");
  EXPECT_EQ(b[4], 3);  // kWireVersion
  EXPECT_EQ(b[6], 3);
  EXPECT_EQ(b[16], 0x08);
  EXPECT_EQ(b[23], 0x01);
}

TEST(WireMessage, EmptyMessageRoundTrips) {
  MessageHeader h;
  h.kind = MessageKind::kShutdown;
  absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(h, {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->size(), kHeaderBytes);
  absl::StatusOr<DecodedMessage> d = decodeMessage(*m, DecodeLimits{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->header.kind, MessageKind::kShutdown);
  EXPECT_TRUE(d->segments.empty());
}

TEST(WireMessage, AnyValuePassesWhenUnchecked) {
  for (Encoding e : kFloatEncodings) {
    SCOPED_TRACE(encodingName(e));
    // Half precision cannot carry 3e38: those encodings get the non-finite values only.
    const bool half = e == Encoding::kDeltaVarintF16;
    SegmentData s;
    s.numel = 10;
    s.indices = {2, 5, 7};
    s.values = {std::nanf(""), half ? 1.0f : 3e38f, -INFINITY};
    EncodeOptions options = EncodeOptions().allowF16(true);
    if (e != Encoding::kDenseF32) options.force(e);
    absl::StatusOr<std::vector<uint8_t>> m =
        encodeMessage(MessageHeader{}, {e == Encoding::kDenseF32 ? asDense(s) : s}, options);
    ASSERT_TRUE(m.ok()) << m.status();
    absl::StatusOr<DecodedMessage> d =
        decodeMessage(*m, DecodeLimits().allow(0, 10).values(ValueCheck::kAny));
    ASSERT_TRUE(d.ok()) << d.status();
    const std::vector<float> got = densify(d->segments[0]);
    EXPECT_TRUE(std::isnan(got[2]));
    EXPECT_EQ(got[5], half ? 1.0f : 3e38f);
    EXPECT_EQ(got[7], -INFINITY);
  }
}

}  // namespace
}  // namespace sparseps

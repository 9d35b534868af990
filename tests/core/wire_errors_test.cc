// One test per way a message can be bad: each must be refused with a Status that
// names the problem, never a crash, an over-read or an allocation from a peer's number.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/wire/wire.h"
#include "core/wire/wire_bytes.h"
#include "tests/core/wire_random.h"
#include "tests/core/wire_reseal.h"

namespace sparseps {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kNumel = 100;
constexpr size_t kBody = kHeaderBytes + kSegmentHeaderBytes;  // first byte of segment 0's data

SegmentData sample() {
  SegmentData s;
  s.segment_id = 0;
  s.numel = kNumel;
  s.indices = {3, 10, 11, 50, 99};
  s.values = {1.0f, -2.0f, 0.5f, 4.0f, -0.25f};
  return s;
}

DecodeLimits limits() { return DecodeLimits().allow(0, kNumel); }

// The segments in encoding (for kDenseF32, densified: it carries dense segments only).
std::vector<uint8_t> encode(std::vector<SegmentData> segments, Encoding encoding) {
  EncodeOptions options = EncodeOptions().allowF16(true);
  if (encoding == Encoding::kDenseF32) {
    for (SegmentData& s : segments) s = wire_test::asDense(s);
  } else {
    options.force(encoding);
  }
  absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(MessageHeader{}, segments, options);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : std::vector<uint8_t>{};
}

std::vector<uint8_t> encode(Encoding encoding) { return encode({sample()}, encoding); }

using wire_test::reseal;

void expectError(const std::vector<uint8_t>& m, const DecodeLimits& l, const std::string& text) {
  absl::StatusOr<DecodedMessage> d = decodeMessage(m, l);
  ASSERT_FALSE(d.ok()) << "expected an error containing '" << text << "'";
  EXPECT_THAT(std::string(d.status().message()), HasSubstr(text));
}

TEST(WireErrors, TruncatedHeader) {
  const std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
  for (size_t n : {size_t{0}, size_t{1}, kHeaderBytes - 1}) {
    absl::StatusOr<MessageHeader> h = decodeHeader(absl::MakeConstSpan(m).first(n));
    ASSERT_FALSE(h.ok());
    EXPECT_THAT(std::string(h.status().message()), HasSubstr("truncated header"));
    EXPECT_FALSE(payloadBytesFromHeader(absl::MakeConstSpan(m).first(n)).ok());
  }
}

TEST(WireErrors, WrongMagic) {
  std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
  m[0] ^= 0x20;
  expectError(m, limits(), "wrong magic");
  EXPECT_FALSE(payloadBytesFromHeader(m).ok());  // refused before a payload receive is posted
}

TEST(WireErrors, UnknownVersion) {
  std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
  m[4] = 2;  // the version whose model message meant the server's push count: refused
  expectError(m, limits(), "unknown protocol version 2");
  EXPECT_FALSE(payloadBytesFromHeader(m).ok());
}

// The transport reads the framing and the size only; the kind is for the receiver's one
// decode of the header.
TEST(WireErrors, TheTransportReadsTheSizeAndLeavesTheKindToTheDecoder) {
  std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
  m[6] = 99;
  absl::StatusOr<size_t> n = payloadBytesFromHeader(m);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, m.size() - kHeaderBytes);
  EXPECT_FALSE(decodeHeader(m).ok());
}

TEST(WireErrors, UnknownKind) {
  for (uint8_t kind : {0, 1, 5, 7, 255}) {
    std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
    m[6] = kind;
    expectError(m, limits(), "unknown message kind");
  }
}

TEST(WireErrors, NonFiniteLearningRate) {
  MessageHeader h;
  h.learning_rate = std::nanf("");
  const std::array<uint8_t, kHeaderBytes> b = encodeHeader(h);
  absl::StatusOr<MessageHeader> d = decodeHeader(b);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("learning rate"));
}

TEST(WireErrors, SegmentCountThePayloadCannotHold) {
  MessageHeader h;
  h.segment_count = 1000000;
  h.payload_bytes = 100;
  absl::StatusOr<MessageHeader> d = decodeHeader(encodeHeader(h));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("1000000 segments"));
}

TEST(WireErrors, PayloadAboveTheLimit) {
  MessageHeader h;
  h.payload_bytes = uint64_t{1} << 40;
  absl::StatusOr<size_t> n = payloadBytesFromHeader(encodeHeader(h));
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(std::string(n.status().message()), HasSubstr("exceeds the limit"));
  EXPECT_FALSE(payloadBytesFromHeader(encodeHeader(h), 1000).ok());
}

TEST(WireErrors, PayloadSizeMismatch) {
  std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
  std::vector<uint8_t> shorter(m.begin(), m.end() - 1);
  expectError(shorter, limits(), "payload size mismatch");
  m.push_back(0);
  expectError(m, limits(), "payload size mismatch");
}

TEST(WireErrors, ChecksumMismatch) {
  for (Encoding e : kFloatEncodings) {
    std::vector<uint8_t> m = encode(e);
    m.back() ^= 1;
    absl::StatusOr<DecodedMessage> d = decodeMessage(m, limits());
    ASSERT_FALSE(d.ok()) << encodingName(e);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(d.status().message()), HasSubstr("checksum mismatch"));
  }
}

TEST(WireErrors, TruncatedPayload) {
  for (Encoding e : kFloatEncodings) {
    SCOPED_TRACE(encodingName(e));
    std::vector<uint8_t> m = encode(e);
    m.resize(m.size() - 1);
    reseal(m);
    expectError(m, limits(), "truncated payload");
  }
  // A second segment cut inside its own 13-byte header.
  SegmentData second = sample();
  second.segment_id = 1;
  std::vector<uint8_t> m = encode({sample(), second}, Encoding::kIndexValueF32);
  m.resize(kHeaderBytes + encodedBytes(sample(), Encoding::kIndexValueF32) + 5);
  reseal(m);
  expectError(m, limits().allow(1, kNumel), "segment #1: truncated payload");
}

TEST(WireErrors, TrailingBytes) {
  for (Encoding e : kFloatEncodings) {
    SCOPED_TRACE(encodingName(e));
    std::vector<uint8_t> m = encode(e);
    m.push_back(0);
    reseal(m);
    expectError(m, limits(), "1 trailing bytes");
  }
}

TEST(WireErrors, UnknownSegmentId) {
  const std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
  expectError(m, DecodeLimits(), "unknown segment id 0");
  expectError(m, DecodeLimits().allow(1, kNumel), "unknown segment id 0");  // id 0 left as kNoSegment
}

TEST(WireErrors, DuplicateSegmentId) {
  const std::vector<uint8_t> m = encode({sample(), sample()}, Encoding::kIndexValueF32);
  expectError(m, limits(), "duplicate segment id 0");
}

TEST(WireErrors, NumelMismatchingTheLayout) {
  const std::vector<uint8_t> m = encode(Encoding::kBitmapF32);
  expectError(m, DecodeLimits().allow(0, kNumel + 1), "does not match the layout");
}

TEST(WireErrors, UnknownEncodingTag) {
  std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
  m[kHeaderBytes] = 14;  // one past the last code's tag
  reseal(m);
  expectError(m, limits(), "unknown encoding tag 14");
}

TEST(WireErrors, IndexOutOfRange) {
  {  // index/value pairs: the last index set to numel
    std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
    wire::storeLe<uint32_t>(m.data() + kBody + 4 * 4, kNumel);
    reseal(m);
    expectError(m, limits(), "index 100 out of range");
  }
  for (Encoding e : {Encoding::kDeltaVarintF32, Encoding::kDeltaVarintF16}) {
    // The first gap (one byte, after the values) set to 127.
    std::vector<uint8_t> m = encode(e);
    const size_t value_bytes = e == Encoding::kDeltaVarintF32 ? 4 : 2;
    m[kBody + 5 * value_bytes] = 127;
    reseal(m);
    expectError(m, limits(), "index 127 out of range");
  }
  {  // bitmap: a padding bit past element 99 set
    std::vector<uint8_t> m = encode(Encoding::kBitmapF32);
    m[kBody + 12] |= 0x80;
    reseal(m);
    expectError(m, limits(), "out of range");
  }
}

TEST(WireErrors, IndicesNotStrictlyIncreasing) {
  for (uint32_t second : {3u, 2u}) {  // equal to the first, then below it
    std::vector<uint8_t> m = encode(Encoding::kIndexValueF32);
    wire::storeLe<uint32_t>(m.data() + kBody + 4, second);
    reseal(m);
    expectError(m, limits(), "not strictly increasing");
  }
}

TEST(WireErrors, NonzeroCountLargerThanTheSegment) {
  for (Encoding e : kFloatEncodings) {
    std::vector<uint8_t> m = encode(e);
    wire::storeLe<uint32_t>(m.data() + kHeaderBytes + 9, kNumel + 1);
    reseal(m);
    expectError(m, limits(), "larger than the segment");
  }
}

TEST(WireErrors, DenseSegmentWithFewerNonzerosThanNumel) {
  std::vector<uint8_t> m = encode(Encoding::kDenseF32);
  wire::storeLe<uint32_t>(m.data() + kHeaderBytes + 9, kNumel - 1);
  reseal(m);
  expectError(m, limits(), "must equal numel");
}

TEST(WireErrors, BitmapCountDisagreesWithNonzeros) {
  std::vector<uint8_t> m = encode(Encoding::kBitmapF32);
  m[kBody] ^= 0x01;  // element 0 was not marked: now six marks for five values
  reseal(m);
  expectError(m, limits(), "bitmap marks 6 elements");
}

TEST(WireErrors, NonFiniteValues) {
  for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    SegmentData s = sample();
    s.values[2] = bad;
    for (Encoding e : kFloatEncodings) {
      SCOPED_TRACE(encodingName(e));
      expectError(encode({s}, e), limits(), "non-finite value");
    }
  }
}

// A finite value no training run makes (the poisoning push was 3e38): refused at
// decode, on the first element that reaches 2^64, wherever it sits in a dense body's chunks.
TEST(WireErrors, ValuesBeyondTheBoundAreRefused) {
  const float bound = 18446744073709551616.0f;  // 2^64
  const float under = std::nextafter(bound, 0.0f);
  for (float bad : {3e38f, -3e38f, bound, -bound, 1e30f}) {
    SegmentData s = sample();
    s.values[3] = bad;
    for (Encoding e : {Encoding::kDenseF32, Encoding::kIndexValueF32, Encoding::kDeltaVarintF32,
                       Encoding::kBitmapF32}) {
      SCOPED_TRACE(std::string(encodingName(e)) + " " + std::to_string(bad));
      expectError(encode({s}, e), limits(), "value");
      expectError(encode({s}, e), limits(), "at element 50 is beyond the bound 2^64");
    }
    SegmentData ok = sample();
    ok.values[3] = bad > 0 ? under : -under;
    for (Encoding e : {Encoding::kDenseF32, Encoding::kIndexValueF32}) {
      absl::StatusOr<DecodedMessage> d = decodeMessage(encode({ok}, e), limits());
      ASSERT_TRUE(d.ok()) << d.status();
    }
  }
  // In a large dense body the offender is found in its chunk, past the first ones.
  SegmentData big;
  big.segment_id = 0;
  big.numel = 100000;
  big.dense = true;
  big.values.assign(big.numel, 0.5f);
  big.values[70001] = 3e38f;
  absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(MessageHeader{}, {big}, EncodeOptions());
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<DecodedMessage> d = decodeMessage(*m, DecodeLimits().allow(0, 100000));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("at element 70001 is beyond"));
}

TEST(WireErrors, VarintOverflow) {
  // One nonzero: its f32 value, then a gap whose fifth byte carries bits past 2^32,
  // then a run of six continuation bytes.
  for (std::vector<uint8_t> gap : {std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 0x1f},
                                   std::vector<uint8_t>{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}}) {
    std::vector<uint8_t> m(kHeaderBytes);
    m.push_back(static_cast<uint8_t>(Encoding::kDeltaVarintF32));
    for (uint32_t field : {0u, kNumel, 1u}) {
      uint8_t b[4];
      wire::storeLe<uint32_t>(b, field);
      m.insert(m.end(), b, b + 4);
    }
    uint8_t value[4];
    wire::storeLe<float>(value, 1.0f);
    m.insert(m.end(), value, value + 4);
    m.insert(m.end(), gap.begin(), gap.end());
    wire::storeLe<uint16_t>(m.data() + 6, static_cast<uint16_t>(MessageKind::kPush));  // read back by reseal
    wire::storeLe<uint32_t>(m.data() + 40, 1);  // segment count, read back by reseal
    reseal(m);
    expectError(m, limits(), "varint overflow");
  }
}

TEST(WireErrors, HugeCountsAreRefusedBeforeAllocating) {
  // A layout with a 4e9-element segment and a message claiming all of it in 13 bytes.
  for (Encoding e : kFloatEncodings) {
    std::vector<uint8_t> m(kHeaderBytes + kSegmentHeaderBytes);
    m[kHeaderBytes] = static_cast<uint8_t>(e);
    wire::storeLe<uint32_t>(m.data() + kHeaderBytes + 1, 0);
    wire::storeLe<uint32_t>(m.data() + kHeaderBytes + 5, 4000000000u);
    wire::storeLe<uint32_t>(m.data() + kHeaderBytes + 9, 4000000000u);
    wire::storeLe<uint16_t>(m.data() + 6, static_cast<uint16_t>(MessageKind::kPush));
    wire::storeLe<uint32_t>(m.data() + 40, 1);
    reseal(m);
    expectError(m, DecodeLimits().allow(0, 4000000000u), "truncated payload");
  }
}

TEST(WireErrors, EncoderRefusesBadInput) {
  auto fails = [](const SegmentData& s, const EncodeOptions& o, const std::string& text) {
    absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(MessageHeader{}, {s}, o);
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(text));
  };
  SegmentData s = sample();
  s.indices[1] = 3;
  fails(s, {}, "not strictly increasing");
  s = sample();
  s.indices[4] = kNumel;
  fails(s, {}, "out of range");
  s = sample();
  s.values.pop_back();
  fails(s, {}, "5 indices but 4 values");
  s = sample();
  s.dense = true;
  fails(s, {}, "dense segment 0");
  fails(sample(), EncodeOptions().force(Encoding::kDeltaVarintF16), "needs EncodeOptions.allow_f16");
  fails(sample(), EncodeOptions().force(Encoding::kDenseF32), "must stay sparse");
  s = sample();
  s.values[0] = 1e6f;
  fails(s, EncodeOptions().force(Encoding::kDeltaVarintF16).allowF16(true), "beyond the f16 range");
}

TEST(WireErrors, RandomCorruptionNeverCrashes) {
  // Flip random payload bytes and reseal: whatever the decoder says, it must say it
  // cleanly (sanitizer builds and the fuzzer check the memory side).
  const uint64_t seed = wire_test::freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (Encoding e : kFloatEncodings) {
    const std::vector<uint8_t> good = encode(e);
    for (int trial = 0; trial < 2000; ++trial) {
      std::vector<uint8_t> m = good;
      const size_t flips = 1 + rng() % 4;
      for (size_t f = 0; f < flips; ++f) {
        m[kHeaderBytes + rng() % (m.size() - kHeaderBytes)] ^= static_cast<uint8_t>(1 + rng() % 255);
      }
      reseal(m);
      absl::StatusOr<DecodedMessage> d = decodeMessage(m, limits());
      if (d.ok()) {
        for (const SegmentData& s : d->segments) {
          ASSERT_TRUE(wire::validateSegment(s).ok());
        }
      } else {
        EXPECT_FALSE(d.status().message().empty());
      }
    }
  }
}

}  // namespace
}  // namespace sparseps

// The wire format's seeded (random-k) and coded segments (quantizers, casts, low-rank
// factors): every field survives a round trip bit for bit, the exact bytes per element of
// each encoding (computed here from the documented layout, not from the implementation's
// helpers), and every way a coded or seeded body can be bad, each refused with a Status
// that names it (never DataLoss: the bad bytes are resealed with a matching checksum).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compressors/codes.h"
#include "compressors/random_k.h"
#include "compressors/registry.h"
#include "core/wire/wire.h"
#include "core/wire/wire_bytes.h"
#include "tests/compressors/code_reference.h"
#include "tests/compressors/quantizer_util.h"
#include "tests/core/wire_random.h"
#include "tests/core/wire_reseal.h"

namespace sparseps {
namespace {

using ::testing::HasSubstr;

// A single-segment message: its segment header, then the body.
constexpr size_t kSeg = kHeaderBytes;
constexpr size_t kBody = kHeaderBytes + kSegmentHeaderBytes;
// In a coded body: u32 code argument, u32 parameter count, the f32 params, the codes.
constexpr size_t kCodeArgAt = kBody;
constexpr size_t kParamCountAt = kBody + 4;
constexpr size_t paramAt(size_t i) { return kBody + 8 + 4 * i; }
constexpr size_t packedAt(size_t params) { return kBody + 8 + 4 * params; }

using testing::normals;
// Bits to hold v (the layout's bit width of qsgd's levels), computed without the library.
using testing::refBitWidth;

// spec's compression of n normal values (seeded by seed) as segment id, viewed with rows.
SegmentData compressWith(const std::string& spec, uint32_t id, uint32_t n, uint32_t rows,
                         uint64_t seed, double density = 0.05) {
  absl::StatusOr<std::unique_ptr<Compressor>> c = makeRegisteredCompressor(spec);
  EXPECT_TRUE(c.ok()) << spec << ": " << c.status();
  SegmentData out;
  if (!c.ok()) return out;
  SelectContext ctx;
  ctx.segment_id = id;
  ctx.step = 7;
  ctx.seed = seed;
  ctx.rows = rows;
  const std::vector<float> x = normals(n, seed);
  (*c)->compress(x, density, ctx, &out);
  return out;
}

struct Case {
  std::string spec;
  uint32_t numel;
  uint32_t rows;  // the matrix view (0: unknown)
  Code code;      // what it must produce (kNone: a seeded random-k segment)
};

// Every coded compressor and random-k, with sizes that leave padding bits where a code has
// them and buckets that do not divide the segment.
std::vector<Case> allCases() {
  std::vector<Case> cases = {
      {"signsgd", 1003, 0, Code::kSign},
      {"onebit", 1000, 40, Code::kSign},
      {"onebit", 1003, 0, Code::kSign},
      {"terngrad", 1003, 0, Code::kTernary},
      {"natural", 1003, 0, Code::kNatural},
      {"fp16", 1003, 0, Code::kF16},
      {"bf16", 1003, 0, Code::kBf16},
      {"powersgd:rank=1", 1000, 40, Code::kLowRank},
      {"powersgd:rank=4", 1000, 40, Code::kLowRank},
      {"powersgd:rank=4", 1024, 0, Code::kLowRank},
      {"randomk", 1003, 0, Code::kNone},
  };
  for (uint32_t levels : {1u, 4u, 16u, 255u}) {
    for (uint32_t bucket : {0u, 512u}) {
      cases.push_back({"qsgd:levels=" + std::to_string(levels) + ",bucket=" + std::to_string(bucket),
                       1003, 0, Code::kQsgd});
    }
  }
  return cases;
}

std::vector<uint32_t> bitsOf(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  if (!v.empty()) std::memcpy(bits.data(), v.data(), 4 * v.size());
  return bits;
}

// Every field, floats bit for bit.
void expectSameSegment(const SegmentData& a, const SegmentData& b) {
  EXPECT_EQ(b.segment_id, a.segment_id);
  EXPECT_EQ(b.numel, a.numel);
  EXPECT_EQ(b.dense, a.dense);
  EXPECT_EQ(b.code, a.code);
  EXPECT_EQ(b.code_arg, a.code_arg);
  EXPECT_EQ(bitsOf(b.params), bitsOf(a.params));
  EXPECT_EQ(b.packed, a.packed);
  EXPECT_EQ(b.index_seed, a.index_seed);
  EXPECT_EQ(b.indices, a.indices);
  EXPECT_EQ(bitsOf(b.values), bitsOf(a.values));
}

DecodeLimits limitsFor(const std::vector<SegmentData>& segments) {
  DecodeLimits limits;
  for (const SegmentData& s : segments) limits.allow(s.segment_id, s.numel);
  return limits;
}

std::vector<uint8_t> encode(const std::vector<SegmentData>& segments) {
  MessageHeader header;
  header.kind = MessageKind::kPush;
  absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(header, segments);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : std::vector<uint8_t>{};
}

// decodeHeader, then decodePayload on the bytes after it.
absl::StatusOr<std::vector<SegmentData>> decode(const std::vector<uint8_t>& m,
                                                const DecodeLimits& limits) {
  absl::StatusOr<MessageHeader> h = decodeHeader(m);
  if (!h.ok()) return h.status();
  return decodePayload(*h, absl::MakeConstSpan(m).subspan(kHeaderBytes), limits);
}

using wire_test::reseal;

// m, resealed, must fail with InvalidArgument naming text.
void expectRefused(std::vector<uint8_t> m, const DecodeLimits& limits, const std::string& text) {
  reseal(m);
  absl::StatusOr<std::vector<SegmentData>> d = decode(m, limits);
  ASSERT_FALSE(d.ok()) << "expected an error containing '" << text << "'";
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << d.status();
  EXPECT_THAT(std::string(d.status().message()), HasSubstr(text));
}

// m, resealed, must decode.
absl::StatusOr<std::vector<SegmentData>> decodeResealed(std::vector<uint8_t> m,
                                                        const DecodeLimits& limits) {
  reseal(m);
  return decode(m, limits);
}

void putU32(std::vector<uint8_t>& m, size_t at, uint32_t v) { wire::storeLe<uint32_t>(m.data() + at, v); }
void putF32(std::vector<uint8_t>& m, size_t at, float v) { wire::storeLe<float>(m.data() + at, v); }
void putU16(std::vector<uint8_t>& m, size_t at, uint16_t v) { wire::storeLe<uint16_t>(m.data() + at, v); }

// One coded segment (id 0, n elements) and its message.
struct Encoded {
  SegmentData segment;
  std::vector<uint8_t> message;
  DecodeLimits limits;
};

Encoded encoded(const std::string& spec, uint32_t n, uint32_t rows = 0, double density = 0.05) {
  Encoded e;
  e.segment = compressWith(spec, 0, n, rows, 99, density);
  e.message = encode({e.segment});
  e.limits = DecodeLimits().allow(0, n);
  return e;
}

// The wire format's tags of the codes, as its readers in other programs know them.
TEST(WireCoded, EncodingsAndCodesCorrespond) {
  const struct {
    Code code;
    uint8_t tag;
    const char* name;
  } kTags[] = {{Code::kSign, 7, "sign_1"},     {Code::kTernary, 8, "ternary_2"},
               {Code::kQsgd, 9, "qsgd"},       {Code::kNatural, 10, "natural_9"},
               {Code::kF16, 11, "dense_f16"},  {Code::kBf16, 12, "dense_bf16"},
               {Code::kLowRank, 13, "low_rank_f32"}};
  for (const auto& t : kTags) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(static_cast<uint8_t>(codeEncoding(t.code)), t.tag);
    EXPECT_EQ(encodingCode(static_cast<Encoding>(t.tag)), t.code);
    EXPECT_STREQ(encodingName(static_cast<Encoding>(t.tag)), t.name);
    EXPECT_TRUE(isEncoding(t.tag));
  }
  for (Encoding e : kFloatEncodings) {
    EXPECT_EQ(encodingCode(e), Code::kNone);
    EXPECT_TRUE(isEncoding(static_cast<uint8_t>(e)));
  }
  EXPECT_EQ(encodingCode(Encoding::kSeededF32), Code::kNone);
  for (int tag : {0, 14, 255}) {
    EXPECT_FALSE(isEncoding(static_cast<uint8_t>(tag))) << tag;
    EXPECT_EQ(encodingCode(static_cast<Encoding>(tag)), Code::kNone) << tag;
    EXPECT_STREQ(encodingName(static_cast<Encoding>(tag)), "unknown") << tag;
  }
}

TEST(WireCoded, EveryCompressorRoundTripsBitForBit) {
  const uint64_t seed = wire_test::freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  for (const Case& c : allCases()) {
    SCOPED_TRACE(c.spec + " numel " + std::to_string(c.numel) + " rows " + std::to_string(c.rows));
    const SegmentData sent = compressWith(c.spec, 3, c.numel, c.rows, seed);
    ASSERT_EQ(sent.code, c.code);
    if (c.code == Code::kNone) {
      ASSERT_TRUE(sent.index_seed.has_value());
      ASSERT_FALSE(sent.values.empty());
    }
    const std::vector<uint8_t> m = encode({sent});
    ASSERT_FALSE(m.empty());
    const Encoding tag = static_cast<Encoding>(m[kSeg]);
    EXPECT_EQ(tag, c.code == Code::kNone ? Encoding::kSeededF32 : codeEncoding(c.code));
    EXPECT_EQ(m.size(), kHeaderBytes + encodedBytes(sent, tag));
    EXPECT_LE(encodedBytes(sent, tag), maxEncodedBytes(sent.numel));
    for (ValueCheck check : {ValueCheck::kBounded, ValueCheck::kAny}) {
      absl::StatusOr<std::vector<SegmentData>> got =
          decode(m, DecodeLimits().allow(3, c.numel).values(check));
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), 1u);
      expectSameSegment(sent, (*got)[0]);
    }
  }
}

// A diverged gradient (an infinity or a NaN) never travels as finite codes: whatever a
// compressor makes of it, the encoder or a receiver's decoder (the bounded check every run
// uses) refuses the message, instead of the server training on a made-up value. Both
// infinities and NaNs of several bit patterns (a carry from the high mantissa bits must
// not reach the exponent or the sign), at positions that the SIMD loops take in their
// vector bodies and in their tails. random-k sends a seeded subset, so there every
// element is non-finite.
TEST(WireCoded, ANonFiniteInputIsRefusedNotSentAsFiniteCodes) {
  std::vector<Case> cases = allCases();
  for (const char* spec : {"dense", "topk", "sampled", "threshold:value=0.5"}) {
    cases.push_back({spec, 1003, 0, Code::kNone});
  }
  for (uint32_t pattern :
       {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7fffffffu, 0xffffffffu, 0x7f800001u,
        0xff800001u}) {
    float bad;
    std::memcpy(&bad, &pattern, sizeof bad);
    for (const Case& c : cases) {
      for (uint32_t at : {0u, 17u, c.numel - 1}) {
        SCOPED_TRACE(::testing::Message() << c.spec << ", 0x" << std::hex << pattern
                                          << std::dec << " at " << at);
        absl::StatusOr<std::unique_ptr<Compressor>> made = makeRegisteredCompressor(c.spec);
        ASSERT_TRUE(made.ok()) << made.status();
        std::vector<float> x = normals(c.numel, 5);
        if (c.spec == "randomk") {
          std::fill(x.begin(), x.end(), bad);
        } else {
          x[at] = bad;
        }
        SelectContext ctx;
        ctx.rows = c.rows;
        SegmentData s;
        (*made)->compress(x, 0.05, ctx, &s);
        MessageHeader header;
        header.kind = MessageKind::kPush;
        absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(header, {s});
        if (!m.ok()) continue;  // refused by the sender
        absl::StatusOr<std::vector<SegmentData>> got =
            decode(*m, DecodeLimits().allow(0, c.numel).values(ValueCheck::kBounded));
        EXPECT_FALSE(got.ok()) << "a non-finite input was sent as finite codes and accepted";
      }
    }
  }
}

// encodedBytes and the message size, against the layout, for n = 2^16 elements.
TEST(WireCoded, BytesPerElement) {
  constexpr uint32_t n = 1u << 16;
  constexpr size_t kHead = 13;    // segment header
  constexpr size_t kPrefix = 8;   // code argument, parameter count
  auto check = [](const SegmentData& s, Encoding e, size_t expected) {
    SCOPED_TRACE(encodingName(e));
    ASSERT_EQ(static_cast<int>(s.code), static_cast<int>(encodingCode(e)));
    EXPECT_EQ(encodedBytes(s, e), expected);
    const std::vector<uint8_t> m = encode({s});
    ASSERT_FALSE(m.empty());
    EXPECT_EQ(m[kSeg], static_cast<uint8_t>(e));
    EXPECT_EQ(m.size(), kHeaderBytes + expected);
  };
  check(compressWith("signsgd", 0, n, 0, 1), codeEncoding(Code::kSign), kHead + kPrefix + 2 * 4 + n / 8);
  check(compressWith("onebit", 0, n, 256, 1), codeEncoding(Code::kSign),
        kHead + kPrefix + 256 * 2 * 4 + n / 8);
  check(compressWith("terngrad", 0, n, 0, 1), codeEncoding(Code::kTernary), kHead + kPrefix + 4 + n / 4);
  {
    const uint32_t width = 1 + refBitWidth(16);  // sign and level
    ASSERT_EQ(width, 6u);
    check(compressWith("qsgd:levels=16,bucket=512", 0, n, 0, 1), codeEncoding(Code::kQsgd),
          kHead + kPrefix + 4 * (n / 512) + (size_t{width} * n + 7) / 8);
    check(compressWith("qsgd:levels=255,bucket=0", 0, n, 0, 1), codeEncoding(Code::kQsgd),
          kHead + kPrefix + 4 + (size_t{1 + 8} * n + 7) / 8);
    check(compressWith("qsgd:levels=1,bucket=512", 0, n, 0, 1), codeEncoding(Code::kQsgd),
          kHead + kPrefix + 4 * (n / 512) + (size_t{2} * n + 7) / 8);
  }
  check(compressWith("natural", 0, n, 0, 1), codeEncoding(Code::kNatural), kHead + kPrefix + (9 * size_t{n} + 7) / 8);
  check(compressWith("fp16", 0, n, 0, 1), codeEncoding(Code::kF16), kHead + kPrefix + 2 * size_t{n});
  check(compressWith("bf16", 0, n, 0, 1), codeEncoding(Code::kBf16), kHead + kPrefix + 2 * size_t{n});
  for (uint32_t rank : {1u, 4u}) {
    const size_t rows = 128, cols = n / rows;
    check(compressWith("powersgd:rank=" + std::to_string(rank), 0, n, rows, 1), codeEncoding(Code::kLowRank),
          kHead + kPrefix + 4 * rank * (rows + cols));
  }
  {
    const SegmentData s = compressWith("randomk", 0, n, 0, 1, 0.01);
    ASSERT_TRUE(s.index_seed.has_value());
    const size_t k = s.values.size();
    ASSERT_GT(k, 0u);
    EXPECT_EQ(encodedBytes(s, Encoding::kSeededF32), kHead + 8 + 4 * k);
    const std::vector<uint8_t> m = encode({s});
    EXPECT_EQ(m[kSeg], static_cast<uint8_t>(Encoding::kSeededF32));
    EXPECT_EQ(m.size(), kHeaderBytes + kHead + 8 + 4 * k);
  }
}

TEST(WireCoded, AMixedMessageRoundTrips) {
  const uint64_t seed = wire_test::freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<SegmentData> sent;
  sent.push_back(wire_test::randomDense(0, 50, rng));
  sent.push_back(wire_test::randomSparse(1, 5000, 0.01, rng));  // delta-varint
  sent.push_back(wire_test::randomSparse(2, 512, 0.6, rng));    // bitmap
  sent.push_back(compressWith("randomk", 3, 4000, 0, seed, 0.02));
  uint32_t id = 4;
  for (const char* spec : {"signsgd", "terngrad", "qsgd:levels=4,bucket=64", "natural", "fp16",
                           "bf16"}) {
    sent.push_back(compressWith(spec, id, 777, 0, seed + id));
    ++id;
  }
  sent.push_back(compressWith("powersgd:rank=2", id++, 600, 20, seed));
  sent.push_back(compressWith("onebit", id++, 600, 30, seed));
  const std::vector<uint8_t> m = encode(sent);
  ASSERT_FALSE(m.empty());
  size_t bytes = kHeaderBytes;
  for (const SegmentData& s : sent) {
    absl::StatusOr<wire::EncodingChoice> choice = wire::chooseEncoding(s, std::nullopt, false);
    ASSERT_TRUE(choice.ok()) << choice.status();
    bytes += choice->bytes;
  }
  EXPECT_EQ(m.size(), bytes);
  absl::StatusOr<std::vector<SegmentData>> got = decode(m, limitsFor(sent));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "segment " << i);
    expectSameSegment(sent[i], (*got)[i]);
  }
}

// A receiver keeps one vector of segments per stream: a slot that held floats (sparse,
// seeded, dense) may next receive a coded segment, and the reverse.
TEST(WireCoded, DecodesIntoReusedSegments) {
  const uint64_t seed = wire_test::freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<SegmentData> floats = {wire_test::randomSparse(0, 900, 0.1, rng),
                                     compressWith("randomk", 1, 900, 0, seed, 0.1),
                                     wire_test::randomDense(2, 900, rng)};
  std::vector<SegmentData> coded = {compressWith("qsgd:levels=16,bucket=512", 0, 900, 0, seed),
                                    compressWith("fp16", 1, 900, 0, seed),
                                    compressWith("powersgd:rank=2", 2, 900, 30, seed)};
  const DecodeLimits limits = limitsFor(floats);
  std::vector<SegmentData> slots;
  for (const std::vector<SegmentData>* sent : {&floats, &coded, &floats, &coded, &coded}) {
    const std::vector<uint8_t> m = encode(*sent);
    absl::StatusOr<MessageHeader> h = decodeHeader(m);
    ASSERT_TRUE(h.ok()) << h.status();
    const absl::Status s =
        decodePayload(*h, absl::MakeConstSpan(m).subspan(kHeaderBytes), limits, &slots);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(slots.size(), sent->size());
    for (size_t i = 0; i < sent->size(); ++i) expectSameSegment((*sent)[i], slots[i]);
  }
}

// Every truncation of a message with one small coded (or seeded) segment.
TEST(WireCodedErrors, TruncatedAtEveryByte) {
  std::vector<Encoded> all = {encoded("signsgd", 100),
                              encoded("onebit", 100, 10),
                              encoded("terngrad", 100),
                              encoded("qsgd:levels=4,bucket=32", 100),
                              encoded("natural", 100),
                              encoded("fp16", 60),
                              encoded("bf16", 60),
                              encoded("powersgd:rank=2", 100, 10),
                              encoded("randomk", 100, 0, 0.1)};
  for (const Encoded& e : all) {
    SCOPED_TRACE(encodingName(static_cast<Encoding>(e.message[kSeg])));
    ASSERT_TRUE(decode(e.message, e.limits).ok());
    for (size_t length = kHeaderBytes; length < e.message.size(); ++length) {
      SCOPED_TRACE(::testing::Message() << "length " << length);
      std::vector<uint8_t> m(e.message.begin(), e.message.begin() + length);
      reseal(m);
      absl::StatusOr<std::vector<SegmentData>> d = decode(m, e.limits);
      ASSERT_FALSE(d.ok());
      EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << d.status();
      if (length >= kBody) {
        EXPECT_THAT(std::string(d.status().message()), HasSubstr("truncated payload"));
      }
    }
  }
}

TEST(WireCodedErrors, ParameterCountThatWouldOverrun) {
  for (const Encoded& e : {encoded("signsgd", 100), encoded("qsgd:levels=4,bucket=32", 100),
                           encoded("terngrad", 100), encoded("powersgd:rank=2", 100, 10),
                           encoded("fp16", 100)}) {
    SCOPED_TRACE(encodingName(static_cast<Encoding>(e.message[kSeg])));
    const uint32_t params = static_cast<uint32_t>(e.segment.params.size());
    ASSERT_EQ(wire::loadLe<uint32_t>(e.message.data() + kParamCountAt), params);
    for (uint32_t count : {params + 1, 0x40000000u, 0x40000001u, 0xffffffffu}) {
      std::vector<uint8_t> m = e.message;
      putU32(m, kParamCountAt, count);
      expectRefused(m, e.limits, "truncated payload: coded parameters and codes needs");
    }
  }
}

TEST(WireCodedErrors, QsgdLevelsOutOfRange) {
  const Encoded e = encoded("qsgd:levels=16,bucket=512", 100);
  for (uint32_t levels : {0u, 32768u, 40000u, 0xffffffffu}) {
    std::vector<uint8_t> m = e.message;
    putU32(m, kCodeArgAt, levels);
    expectRefused(m, e.limits,
                  "qsgd segment: " + std::to_string(levels) + " levels, must be in [1, 32767]");
  }
}

TEST(WireCodedErrors, QsgdLevelAboveS) {
  // levels 4: 3 level bits and a sign bit per element; field 0 set to level 7, sign 0.
  const Encoded e = encoded("qsgd:levels=4,bucket=0", 100);
  std::vector<uint8_t> m = e.message;
  const size_t at = packedAt(1);
  m[at] = static_cast<uint8_t>((m[at] & 0xf0) | 0x7);
  expectRefused(m, e.limits, "qsgd segment 0: invalid code 7 at element 0");
}

TEST(WireCodedErrors, QsgdNegativeNorm) {
  const Encoded e = encoded("qsgd:levels=4,bucket=0", 100);
  std::vector<uint8_t> m = e.message;
  putF32(m, paramAt(0), -1.0f);
  expectRefused(m, e.limits, "negative norm");
}

TEST(WireCodedErrors, TernaryField3) {
  const Encoded e = encoded("terngrad", 100);
  for (size_t element : {0, 37, 99}) {
    std::vector<uint8_t> m = e.message;
    m[packedAt(1) + element / 4] |= static_cast<uint8_t>(3u << (2 * (element % 4)));
    expectRefused(m, e.limits,
                  "ternary segment 0: invalid code 3 at element " + std::to_string(element));
  }
}

TEST(WireCodedErrors, HalfInfinityAndNaN) {
  const Encoded e = encoded("fp16", 100);
  for (uint16_t bad : {uint16_t{0x7c00}, uint16_t{0xfc00}, uint16_t{0x7e00}}) {
    std::vector<uint8_t> m = e.message;
    putU16(m, packedAt(0) + 2 * 5, bad);
    expectRefused(m, e.limits, "f16 segment 0: invalid code " + std::to_string(bad) + " at element 5");
    // The format has no non-finite half, whatever the value policy.
    expectRefused(m, DecodeLimits(e.limits).values(ValueCheck::kAny), "invalid code");
  }
}

TEST(WireCodedErrors, Bf16NaNAndInfinity) {
  const Encoded e = encoded("bf16", 100);
  for (uint16_t bad : {uint16_t{0x7fc0}, uint16_t{0xffc1}, uint16_t{0x7f80}}) {
    std::vector<uint8_t> m = e.message;
    putU16(m, packedAt(0) + 2 * 99, bad);
    expectRefused(m, e.limits, "bf16 segment 0: invalid code " + std::to_string(bad) + " at element 99");
    expectRefused(m, DecodeLimits(e.limits).values(ValueCheck::kAny), "invalid code");
  }
}

TEST(WireCodedErrors, NaturalExponent255) {
  const Encoded e = encoded("natural", 100);
  for (uint8_t sign : {0, 1}) {
    std::vector<uint8_t> m = e.message;
    // Element 0 is bits 0..8: the exponent is byte 0, the sign bit 0 of byte 1.
    m[packedAt(0)] = 0xff;
    m[packedAt(0) + 1] = static_cast<uint8_t>((m[packedAt(0) + 1] & 0xfe) | sign);
    const std::string field = std::to_string(255 + 256 * sign);
    expectRefused(m, e.limits, "natural segment 0: invalid code " + field + " at element 0");
    expectRefused(m, DecodeLimits(e.limits).values(ValueCheck::kAny), "invalid code " + field);
  }
}

TEST(WireCodedErrors, NonzeroPaddingBits) {
  // 101 elements: every sub-byte width leaves padding bits in the last byte.
  for (const Encoded& e : {encoded("signsgd", 101), encoded("terngrad", 101),
                           encoded("qsgd:levels=4,bucket=0", 101),
                           encoded("qsgd:levels=255,bucket=0", 101), encoded("natural", 101)}) {
    SCOPED_TRACE(encodingName(static_cast<Encoding>(e.message[kSeg])));
    const size_t bits = 101 * size_t{codeWidth(e.segment.code, e.segment.code_arg)};
    ASSERT_NE(bits % 8, 0u);
    std::vector<uint8_t> m = e.message;
    m.back() |= 0x80;  // the top bit of the last byte is past the last field
    expectRefused(m, e.limits, "nonzero padding bits");
  }
}

TEST(WireCodedErrors, SignArgumentsAndBuckets) {
  const Encoded e = encoded("signsgd", 100);
  {
    std::vector<uint8_t> m = e.message;
    putU32(m, kCodeArgAt, 1);
    expectRefused(m, e.limits, "unexpected argument 1");
  }
  {  // three params: not a whole number of {v0, v1} pairs (the body grows by one float)
    std::vector<uint8_t> m = e.message;
    putU32(m, kParamCountAt, 3);
    m.insert(m.begin() + static_cast<std::ptrdiff_t>(paramAt(2)), {0, 0, 0, 0});
    expectRefused(m, e.limits, "3 parameters for 100 elements");
  }
  {  // no params at all
    std::vector<uint8_t> m = e.message;
    putU32(m, kParamCountAt, 0);
    m.erase(m.begin() + static_cast<std::ptrdiff_t>(paramAt(0)),
            m.begin() + static_cast<std::ptrdiff_t>(paramAt(2)));
    expectRefused(m, e.limits, "0 parameters for 100 elements");
  }
  {  // 51 buckets of ceil(100 / 51) = 2 elements: the last one is empty
    std::vector<uint8_t> m = e.message;
    putU32(m, kParamCountAt, 102);
    m.insert(m.begin() + static_cast<std::ptrdiff_t>(paramAt(2)), 100 * 4, 0);
    expectRefused(m, e.limits, "51 buckets for 100 elements leave one empty");
  }
  {  // a ternary segment with an argument
    const Encoded t = encoded("terngrad", 100);
    std::vector<uint8_t> m = t.message;
    putU32(m, kCodeArgAt, 5);
    expectRefused(m, t.limits, "unexpected argument 5");
  }
}

TEST(WireCodedErrors, LowRankRowsThatDoNotDivideNumel) {
  const Encoded e = encoded("powersgd:rank=1", 100, 10);  // 10 x 10, 20 factor values
  ASSERT_EQ(e.segment.code_arg, 10u);
  for (uint32_t rows : {0u, 7u, 101u, 0xffffffffu}) {
    std::vector<uint8_t> m = e.message;
    putU32(m, kCodeArgAt, rows);
    expectRefused(m, e.limits, std::to_string(rows) + " rows do not divide numel 100");
  }
}

TEST(WireCodedErrors, LowRankParamsNotAWholeRank) {
  const Encoded e = encoded("powersgd:rank=1", 100, 10);
  ASSERT_EQ(e.segment.params.size(), 20u);
  {  // one factor value dropped (the body shrinks with it)
    std::vector<uint8_t> m = e.message;
    putU32(m, kParamCountAt, 19);
    m.resize(m.size() - 4);
    expectRefused(m, e.limits, "19 factor values are not a whole rank of a 10 x 10 matrix");
  }
  {  // none
    std::vector<uint8_t> m = e.message;
    putU32(m, kParamCountAt, 0);
    m.resize(paramAt(0));
    expectRefused(m, e.limits, "0 factor values are not a whole rank");
  }
  {  // the same 20 values read as a 4 x 25 matrix (29 per rank)
    std::vector<uint8_t> m = e.message;
    putU32(m, kCodeArgAt, 4);
    expectRefused(m, e.limits, "20 factor values are not a whole rank of a 4 x 25 matrix");
  }
}

TEST(WireCodedErrors, SeededNonzerosAboveNumel) {
  const Encoded e = encoded("randomk", 100, 0, 0.1);
  ASSERT_EQ(e.message[kSeg], static_cast<uint8_t>(Encoding::kSeededF32));
  const uint32_t k = static_cast<uint32_t>(e.segment.values.size());
  for (uint32_t nonzeros : {101u, 0xffffffffu}) {
    std::vector<uint8_t> m = e.message;
    putU32(m, kSeg + 9, nonzeros);
    // Values for every announced nonzero where that is small, so only the count is wrong.
    if (nonzeros == 101) m.insert(m.end(), size_t{4} * (nonzeros - k), 0);
    expectRefused(m, e.limits, "nonzero count " + std::to_string(nonzeros) +
                                   " larger than the segment's numel 100");
  }
  {  // fewer values than announced
    std::vector<uint8_t> m = e.message;
    putU32(m, kSeg + 9, k + 1);
    expectRefused(m, e.limits, "truncated payload: index seed and values");
  }
}

TEST(WireCodedErrors, CodedNonzerosOtherThanNumel) {
  for (const Encoded& e : {encoded("signsgd", 100), encoded("terngrad", 100),
                           encoded("qsgd:levels=4,bucket=32", 100), encoded("natural", 100),
                           encoded("fp16", 100), encoded("bf16", 100),
                           encoded("powersgd:rank=1", 100, 10)}) {
    SCOPED_TRACE(encodingName(static_cast<Encoding>(e.message[kSeg])));
    for (uint32_t nonzeros : {0u, 99u, 101u}) {
      std::vector<uint8_t> m = e.message;
      putU32(m, kSeg + 9, nonzeros);
      expectRefused(m, e.limits, "coded segment announces " + std::to_string(nonzeros) +
                                     " nonzeros, must equal numel 100");
    }
  }
}

// Params and codes whose values reach 2^64: refused under kBounded, carried as they are
// under kAny; non-finite params are refused under either.
TEST(WireCodedErrors, ValuesBeyondTheBound) {
  const float bound = 18446744073709551616.0f;  // 2^64
  const float under = std::nextafter(bound, 0.0f);
  auto refusedThenAccepted = [](const std::vector<uint8_t>& m, const DecodeLimits& limits,
                                const std::string& text) {
    expectRefused(m, limits, text);
    absl::StatusOr<std::vector<SegmentData>> any =
        decodeResealed(m, DecodeLimits(limits).values(ValueCheck::kAny));
    EXPECT_TRUE(any.ok()) << any.status();
    return any.ok() ? (*any)[0] : SegmentData{};
  };
  for (const Encoded& e : {encoded("signsgd", 100), encoded("onebit", 100, 10),
                           encoded("terngrad", 100), encoded("qsgd:levels=4,bucket=32", 100),
                           encoded("powersgd:rank=2", 100, 10)}) {
    SCOPED_TRACE(encodingName(static_cast<Encoding>(e.message[kSeg])));
    const size_t last = e.segment.params.size() - 1;
    for (float big : {bound, 3e38f}) {
      for (size_t i : {size_t{0}, last}) {
        std::vector<uint8_t> m = e.message;
        putF32(m, paramAt(i), big);
        const SegmentData got = refusedThenAccepted(
            m, e.limits, "parameter " + std::to_string(i) + " is");
        if (!got.params.empty()) {
          EXPECT_EQ(got.params[i], big);
        }
      }
    }
    if (e.segment.code != Code::kLowRank) {  // just under the bound passes either way
      std::vector<uint8_t> m = e.message;
      putF32(m, paramAt(0), under);
      absl::StatusOr<std::vector<SegmentData>> d = decodeResealed(m, e.limits);
      EXPECT_TRUE(d.ok()) << d.status();
    }
    for (float bad : {INFINITY, -INFINITY, std::nanf("")}) {
      std::vector<uint8_t> m = e.message;
      putF32(m, paramAt(last), bad);
      expectRefused(m, e.limits, "not finite");
      expectRefused(m, DecodeLimits(e.limits).values(ValueCheck::kAny), "not finite");
    }
  }
  {  // low-rank factors each under the bound whose product can reach it
    const Encoded e = encoded("powersgd:rank=2", 100, 10);
    std::vector<uint8_t> m = e.message;
    for (size_t i = 0; i < e.segment.params.size(); ++i) putF32(m, paramAt(i), 0x1p33f);
    refusedThenAccepted(m, e.limits, "can decode to a value beyond the bound 2^64");
    for (size_t i = 0; i < e.segment.params.size(); ++i) putF32(m, paramAt(i), 0x1p31f);
    absl::StatusOr<std::vector<SegmentData>> d = decodeResealed(m, e.limits);  // 2 * 2^62
    EXPECT_TRUE(d.ok()) << d.status();
  }
  {  // natural exponents: 190 is 2^63, 191 is 2^64, 254 is 2^127
    const Encoded e = encoded("natural", 100);
    for (uint8_t exponent : {191, 200, 254}) {
      std::vector<uint8_t> m = e.message;
      m[packedAt(0)] = exponent;
      refusedThenAccepted(m, e.limits, "natural segment 0: invalid code");
    }
    std::vector<uint8_t> m = e.message;
    m[packedAt(0)] = 190;
    absl::StatusOr<std::vector<SegmentData>> d = decodeResealed(m, e.limits);
    EXPECT_TRUE(d.ok()) << d.status();
  }
  {  // bf16: 0x5f80 is 2^64, 0x7f7f the largest finite, 0x5f7f just under 2^64
    const Encoded e = encoded("bf16", 100);
    for (uint16_t big : {uint16_t{0x5f80}, uint16_t{0xdf80}, uint16_t{0x7f7f}}) {
      std::vector<uint8_t> m = e.message;
      putU16(m, packedAt(0) + 2 * 10, big);
      refusedThenAccepted(m, e.limits, "bf16 segment 0: invalid code " + std::to_string(big));
    }
    std::vector<uint8_t> m = e.message;
    putU16(m, packedAt(0) + 2 * 10, 0x5f7f);
    absl::StatusOr<std::vector<SegmentData>> d = decodeResealed(m, e.limits);
    EXPECT_TRUE(d.ok()) << d.status();
  }
  {  // seeded values
    const Encoded e = encoded("randomk", 100, 0, 0.1);
    std::vector<uint8_t> m = e.message;
    putF32(m, kBody + 8 + 4 * 2, 3e38f);  // after the u64 seed: value 2
    const SegmentData got = refusedThenAccepted(
        m, e.limits, "at element " + std::to_string(e.segment.indices[2]) + " is beyond the bound");
    if (got.values.size() > 2) {
      EXPECT_EQ(got.values[2], 3e38f);
    }
  }
}

// A coded segment that takes more bytes than maxEncodedBytes(numel): the encoder refuses
// it, and so does the decoder (a receiver sizes its limits from maxEncodedBytes, and what
// decodes must encode again).
TEST(WireCodedErrors, CodedSegmentLargerThanTheBound) {
  {  // sign, 16 buckets of one element, the most it may have: 13 + 8 + 128 + 2 bytes fit
     // in the bound 13 + 16 + 8 * 16, as every non-low-rank code's largest form does.
    const Encoded e = encoded("signsgd", 16);
    std::vector<uint8_t> m = e.message;
    putU32(m, kParamCountAt, 32);
    m.insert(m.begin() + static_cast<std::ptrdiff_t>(paramAt(2)), 30 * 4, 0);
    reseal(m);
    absl::StatusOr<std::vector<SegmentData>> d = decode(m, e.limits);
    ASSERT_TRUE(d.ok()) << d.status();
    absl::StatusOr<std::vector<uint8_t>> again = encodeMessage(MessageHeader{}, *d);
    EXPECT_TRUE(again.ok()) << again.status();
  }
  {  // low-rank 10 x 10 at rank 11: 13 + 8 + 880 bytes; the bound is 13 + 16 + 800
    const Encoded e = encoded("powersgd:rank=1", 100, 10);
    std::vector<uint8_t> m = e.message;
    putU32(m, kParamCountAt, 220);
    m.insert(m.end(), 200 * 4, 0);
    expectRefused(m, e.limits, "low-rank segment takes 901 bytes, more than its 100 elements may");
  }
}

TEST(WireCodedErrors, EncoderRefusesBadCodedSegments) {
  auto fails = [](const SegmentData& s, const std::string& text) {
    absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(MessageHeader{}, {s});
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(text));
  };
  SegmentData s = compressWith("terngrad", 0, 100, 0, 1);
  s.values = {1.0f};
  fails(s, "also carries dense or sparse values");
  s = compressWith("terngrad", 0, 100, 0, 1);
  s.packed.pop_back();
  fails(s, "bytes of codes, expected 25");
  s = compressWith("qsgd:levels=4,bucket=0", 0, 100, 0, 1);
  s.code_arg = 0;
  fails(s, "0 levels");
  s = compressWith("powersgd:rank=1", 0, 100, 10, 1);
  s.params.resize(15);
  fails(s, "15 factor values");
  // Factors that outweigh the matrix: rank 11 of 10 x 10 takes 13 + 8 + 4 * 11 * 20 bytes,
  // more than the 13 + 16 + 8 * 100 any encoding of 100 elements may take.
  s = compressWith("powersgd:rank=1", 0, 100, 10, 1);
  s.params.assign(11 * 20, 0.5f);
  fails(s, "takes more bytes");
}

// Random byte flips in coded bodies, resealed: whatever the decoder says, it says it
// cleanly, and what it accepts is a valid coded segment.
TEST(WireCodedErrors, RandomCorruptionNeverCrashes) {
  const uint64_t seed = wire_test::freshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (const Encoded& e : {encoded("onebit", 64, 8), encoded("terngrad", 64),
                           encoded("qsgd:levels=255,bucket=16", 64), encoded("natural", 64),
                           encoded("fp16", 64), encoded("bf16", 64),
                           encoded("powersgd:rank=2", 64, 8), encoded("randomk", 64, 0, 0.2)}) {
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> m = e.message;
      const size_t flips = 1 + rng() % 4;
      for (size_t f = 0; f < flips; ++f) {
        m[kHeaderBytes + rng() % (m.size() - kHeaderBytes)] ^= static_cast<uint8_t>(1 + rng() % 255);
      }
      reseal(m);
      for (ValueCheck check : {ValueCheck::kBounded, ValueCheck::kAny}) {
        absl::StatusOr<std::vector<SegmentData>> d = decode(m, DecodeLimits(e.limits).values(check));
        if (d.ok()) {
          for (const SegmentData& s : *d) {
            if (s.coded()) {
              EXPECT_TRUE(validateCoded(s, check == ValueCheck::kBounded).ok());
            }
          }
        } else {
          EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << d.status();
          EXPECT_FALSE(d.status().message().empty());
        }
      }
    }
  }
}

}  // namespace
}  // namespace sparseps

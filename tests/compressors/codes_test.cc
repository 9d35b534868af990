// validateCoded (codes.h) on segments written here by hand, field by field, from the
// documented layout: each valid one passes, and each broken one is refused.

#include "compressors/codes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compressors/apply.h"
#include "tests/compressors/code_reference.h"

namespace sparseps {
namespace {

using testing::refSetField;
using testing::refWidth;

// A coded segment of fields[] (one per element), packed by the reference bit writer.
SegmentData coded(Code code, uint32_t code_arg, const std::vector<uint32_t>& fields,
                  std::vector<float> params) {
  SegmentData s;
  s.segment_id = 9;
  s.numel = static_cast<uint32_t>(fields.size());
  s.code = code;
  s.code_arg = code_arg;
  s.params = std::move(params);
  const uint32_t w = refWidth(code, code_arg);
  s.packed.assign((size_t{w} * fields.size() + 7) / 8, 0);
  for (size_t i = 0; i < fields.size(); ++i) refSetField(&s.packed, i, w, fields[i]);
  return s;
}

void expectValid(const SegmentData& s) {
  const absl::Status st = validateCoded(s, true);
  EXPECT_TRUE(st.ok()) << st;
}

void expectRefused(const SegmentData& s, const std::string& what, bool bound_values = true) {
  const absl::Status st = validateCoded(s, bound_values);
  EXPECT_FALSE(st.ok()) << what;
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << what << ": " << st;
}

// Bytes written out by hand from each code's layout (its CodeFormat): the reference
// reader and the implementation's decode both read them as documented.
TEST(CodesLayout, HandPackedBytesDecode) {
  auto decode = [](const SegmentData& s) {
    std::vector<float> out(s.numel, 0.0f);
    scatterAdd(absl::MakeSpan(out), s, 1.0f);
    return out;
  };
  // kQsgd, s = 5: 4-bit fields (3 level bits, sign on top). Fields 5, 8|3, 1:
  // byte 0 = 0101 | 1011 << 4 = 0xb5, byte 1 = 0001.
  SegmentData q;
  q.numel = 3;
  q.code = Code::kQsgd;
  q.code_arg = 5;
  q.params = {10.0f};
  q.packed = {0xb5, 0x01};
  EXPECT_EQ(testing::refField(q.packed, 0, 4), 5u);
  EXPECT_EQ(testing::refField(q.packed, 1, 4), 11u);
  EXPECT_EQ(testing::refField(q.packed, 2, 4), 1u);
  EXPECT_TRUE(validateCoded(q, true).ok()) << validateCoded(q, true);
  EXPECT_EQ(testing::refDecode(q), (std::vector<double>{10.0, -6.0, 2.0}));
  EXPECT_EQ(decode(q), (std::vector<float>{10.0f, -6.0f, 2.0f}));
  // kNatural: 9-bit fields. 0x17f (-2^0) then 0x080 (2^1): byte 0 = 0x7f, byte 1 = bit 8 of
  // field 0 and bits 0..6 of field 1 (0) shifted by 1, byte 2 = bit 7 of field 1.
  SegmentData n;
  n.numel = 2;
  n.code = Code::kNatural;
  n.packed = {0x7f, 0x01, 0x01};
  EXPECT_TRUE(validateCoded(n, true).ok()) << validateCoded(n, true);
  EXPECT_EQ(testing::refDecode(n), (std::vector<double>{-1.0, 2.0}));
  EXPECT_EQ(decode(n), (std::vector<float>{-1.0f, 2.0f}));
  // kSign, two buckets of 2 and 1 element ({v0, v1} each): bits 1, 0, 1 = 0x05.
  SegmentData g;
  g.numel = 3;
  g.code = Code::kSign;
  g.params = {1.0f, -1.0f, 4.0f, -4.0f};
  g.packed = {0x05};
  EXPECT_EQ(testing::refDecode(g), (std::vector<double>{-1.0, 1.0, -4.0}));
  EXPECT_EQ(decode(g), (std::vector<float>{-1.0f, 1.0f, -4.0f}));
  // kTernary: 2-bit fields 1, 2, 0, 1 = 01 10 00 01 from bit 0: 0b01001001 = 0x49.
  SegmentData t;
  t.numel = 4;
  t.code = Code::kTernary;
  t.params = {3.0f};
  t.packed = {0x49};
  EXPECT_EQ(testing::refDecode(t), (std::vector<double>{3.0, -3.0, 0.0, 3.0}));
  EXPECT_EQ(decode(t), (std::vector<float>{3.0f, -3.0f, 0.0f, 3.0f}));
  // kF16 little-endian: 0x3c00 (1), 0xc000 (-2), 0x0001 (2^-24); kBf16 0x3fc0 (1.5).
  SegmentData h;
  h.numel = 3;
  h.code = Code::kF16;
  h.packed = {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00};
  EXPECT_EQ(testing::refDecode(h), (std::vector<double>{1.0, -2.0, 0x1p-24}));
  EXPECT_EQ(decode(h), (std::vector<float>{1.0f, -2.0f, 0x1p-24f}));
  SegmentData b;
  b.numel = 1;
  b.code = Code::kBf16;
  b.packed = {0xc0, 0x3f};
  EXPECT_EQ(decode(b), (std::vector<float>{1.5f}));
  EXPECT_EQ(testing::refDecode(b), (std::vector<double>{1.5}));
}

TEST(ValidateCoded, TernaryFieldThree) {
  expectValid(coded(Code::kTernary, 0, {0, 1, 2, 0, 1}, {1.5f}));
  expectRefused(coded(Code::kTernary, 0, {0, 1, 3, 0, 1}, {1.5f}), "ternary 3");
  const absl::Status st = validateCoded(coded(Code::kTernary, 0, {0, 1, 3, 0, 1}, {1.5f}), true);
  EXPECT_NE(std::string(st.message()).find("element 2"), std::string::npos) << st;
}

TEST(ValidateCoded, QsgdLevelAboveS) {
  // s = 5: 3 level bits and a sign bit; levels 6 and 7 fit the bits but exceed s.
  expectValid(coded(Code::kQsgd, 5, {0, 5, 8 | 5, 8 | 1}, {2.0f}));
  expectRefused(coded(Code::kQsgd, 5, {0, 6, 1, 1}, {2.0f}), "level 6 > s = 5");
  expectRefused(coded(Code::kQsgd, 5, {0, 1, 8 | 7, 1}, {2.0f}), "level 7 > s = 5, negative");
  // Levels outside [1, 2^15 - 1], and a negative norm.
  expectRefused(coded(Code::kQsgd, 0, {0, 0}, {2.0f}), "s = 0");
  expectRefused(coded(Code::kQsgd, 5, {0, 1}, {-2.0f}), "negative norm");
}

TEST(ValidateCoded, NaturalExponent255) {
  expectValid(coded(Code::kNatural, 0, {0, 127, 256 | 127, 190}, {}));
  expectRefused(coded(Code::kNatural, 0, {0, 255, 1, 1}, {}), "exponent 255");
  expectRefused(coded(Code::kNatural, 0, {0, 256 | 255}, {}), "exponent 255, negative");
  // 2^64 reaches the bound on values; without bound_values it is only a large value.
  const SegmentData big = coded(Code::kNatural, 0, {191}, {});
  expectRefused(big, "2^64 with bound_values");
  EXPECT_TRUE(validateCoded(big, false).ok());
}

TEST(ValidateCoded, F16InfinityAndNan) {
  expectValid(coded(Code::kF16, 0, {0x3c00, 0x7bff, 0xfbff, 0x0001}, {}));
  expectRefused(coded(Code::kF16, 0, {0x3c00, 0x7c00}, {}), "+infinity");
  expectRefused(coded(Code::kF16, 0, {0xfc00, 0}, {}), "-infinity");
  expectRefused(coded(Code::kF16, 0, {0x7e00}, {}), "NaN");
  expectRefused(coded(Code::kBf16, 0, {0x7f80}, {}), "bf16 infinity");
  expectValid(coded(Code::kBf16, 0, {0x3f80, 0x5f7f}, {}));
}

TEST(ValidateCoded, NonzeroPaddingBits) {
  // 5 ternary fields: 10 bits, so bits 10..15 of the second byte are padding.
  SegmentData t = coded(Code::kTernary, 0, {1, 2, 0, 1, 2}, {1.0f});
  expectValid(t);
  t.packed[1] |= 1u << 4;  // bit 12
  expectRefused(t, "ternary padding");
  // 3 sign fields: bits 3..7 of the only byte are padding.
  SegmentData sign = coded(Code::kSign, 0, {1, 0, 1}, {1.0f, -1.0f});
  expectValid(sign);
  sign.packed[0] |= 0x80;
  expectRefused(sign, "sign padding");
  // 1 natural field: 9 bits, bits 9..15 padding.
  SegmentData nat = coded(Code::kNatural, 0, {127}, {});
  nat.packed[1] |= 0x02;
  expectRefused(nat, "natural padding");
}

TEST(ValidateCoded, WrongParamsOrBytes) {
  expectRefused(coded(Code::kTernary, 0, {1, 2}, {}), "ternary, no scale");
  expectRefused(coded(Code::kTernary, 0, {1, 2}, {1.0f, 2.0f}), "ternary, two scales");
  expectRefused(coded(Code::kF16, 0, {0x3c00}, {1.0f}), "f16 with a param");
  expectRefused(coded(Code::kNatural, 0, {127}, {1.0f}), "natural with a param");
  expectRefused(coded(Code::kSign, 0, {1, 0, 1}, {1.0f, -1.0f, 2.0f}), "sign, odd params");
  expectRefused(coded(Code::kSign, 0, {1, 0, 1}, {}), "sign, no params");
  // More buckets than elements.
  expectRefused(coded(Code::kSign, 0, {1, 0, 1}, {1, -1, 1, -1, 1, -1, 1, -1}), "4 buckets of 3");
  expectRefused(coded(Code::kQsgd, 5, {0, 1, 1}, {1, 1, 1, 1}), "4 qsgd buckets for 3");
  expectValid(coded(Code::kQsgd, 5, {0, 1, 1}, {1, 1, 1}));
  expectValid(coded(Code::kSign, 0, {0, 1, 1, 0, 1}, {1, -1, 2, -2, 3, -3}));  // 2, 2, 1
  // Non-finite params.
  expectRefused(coded(Code::kTernary, 0, {1, 2}, {INFINITY}), "infinite scale");
  expectRefused(coded(Code::kQsgd, 5, {1, 2}, {NAN}), "NaN norm");
  // A byte too many or too few.
  SegmentData longer = coded(Code::kTernary, 0, {1, 2}, {1.0f});
  longer.packed.push_back(0);
  expectRefused(longer, "extra byte");
  SegmentData shorter = coded(Code::kF16, 0, {0x3c00, 0x3c00}, {});
  shorter.packed.pop_back();
  expectRefused(shorter, "missing byte");
  // Coded and also dense or sparse.
  SegmentData both = coded(Code::kTernary, 0, {1, 2}, {1.0f});
  both.values = {1.0f};
  both.indices = {0};
  expectRefused(both, "coded with values");
}

TEST(ValidateCoded, LowRankFactorsBeyondTheBound) {
  // 2 x 3, rank 1: P = {p0, p1}, Q = {q0, q1, q2}.
  SegmentData lr;
  lr.segment_id = 1;
  lr.numel = 6;
  lr.code = Code::kLowRank;
  lr.code_arg = 2;
  lr.params = {1, 2, 3, 4, 5};
  expectValid(lr);
  // Each factor below 2^64, their product above: 1e10 * 1e10 = 1e20 > 1.8e19.
  lr.params = {1e10f, 0, 1e10f, 0, 0};
  expectRefused(lr, "product beyond 2^64");
  EXPECT_TRUE(validateCoded(lr, false).ok()) << "without bound_values it is a large value";
  lr.params = {1e9f, 1, 1e9f, 1, 1};  // 1e18: below
  expectValid(lr);
  // Rank 2: the sum of two products beyond the bound although each is below it.
  // P = {{a, a}, {0, 0}}, Q = {{a, a}, {0, 0}, {0, 0}}: element 0 is 2 a^2 = 1.92e19.
  const float a = 3.1e9f;
  lr.params = {a, a, 0, 0, a, a, 0, 0, 0, 0};
  expectRefused(lr, "rank-2 sum beyond 2^64");
  // Shape errors: rows not dividing numel, no rows, a partial rank, packed bytes.
  lr.params = {1, 2, 3, 4, 5};
  lr.code_arg = 4;
  expectRefused(lr, "4 rows of 6");
  lr.code_arg = 0;
  expectRefused(lr, "0 rows");
  lr.code_arg = 2;
  lr.params = {1, 2, 3, 4};
  expectRefused(lr, "4 params for 2 + 3");
  lr.params = {1, 2, 3, 4, 5};
  lr.packed = {0};
  expectRefused(lr, "low-rank with packed codes");
}

}  // namespace
}  // namespace sparseps

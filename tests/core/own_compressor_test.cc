// A compressor of one's own: this file writes it (the scaled sign of Bernstein et al.'s
// signSGD with the mean magnitude, as EF-signSGD sends it: mean|x| * sign(x), here dense
// and with a `scale` option) and one line registers it (`compressorRegistry().add`,
// below); gd then runs it by name as it runs the built-ins. Checked against the update
// written out by hand. Then one with a code of its own (8-bit levels), which travels in
// an encoding of its own: its CodeFormat, in this file too, is all the wire needs.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compressors/codes.h"
#include "compressors/dense.h"
#include "compressors/registry.h"
#include "core/wire/wire.h"
#include "core/virtual/virtual_job.h"
#include "optim/builtin_methods.h"
#include "tests/core/quadratic_job.h"

namespace sparseps {
namespace {

class MeanSign : public Compressor {
 public:
  explicit MeanSign(double scale) : scale_(static_cast<float>(scale)) {}
  void compress(absl::Span<const float> x, double /*density*/, const SelectContext& ctx,
                SegmentData* out) const override {
    float mean = 0.0f;
    for (float v : x) mean += std::fabs(v);
    mean /= static_cast<float>(x.size());
    denseSegment(x, ctx.segment_id, out);
    for (float& v : out->values) v = v > 0 ? scale_ * mean : (v < 0 ? -scale_ * mean : 0.0f);
  }
  std::string name() const override { return "meansign"; }

 private:
  float scale_;
};

CompressorInfo meanSignInfo() {
  return {"meansign", "mean|x| * sign(x), dense", "a test's own", {{"scale", "1", "a factor"}},
          [](OptionReader& options) -> absl::StatusOr<std::unique_ptr<Compressor>> {
            double scale = 1.0;
            if (auto s = options.read("scale", &scale); !s.ok()) return s;
            return std::make_unique<MeanSign>(scale);
          }};
}

constexpr int kSteps = 20;
constexpr float kLr = 0.1f;
constexpr float kScale = 0.5f;

// Runs gd with the compressor of spec (no error feedback) and checks the server's model
// against the update by hand: the compressed segment (elements 0 to 5) moves by
// step(lr * g), the dense one by lr * g.
void expectGdMovesBy(const std::string& spec,
                     const std::function<std::vector<float>(const std::vector<float>&)>& step) {
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  std::vector<float> server;
  VirtualJobOptions o = testing::quadraticJob("gd", kLr, &server);
  o.job.method_options.gd.setCompressor(spec).setErrorFeedback(false);
  testing::Quadratic workload(kSteps);
  auto result = runVirtualJob(o, methods, workload);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, static_cast<uint64_t>(kSteps));

  std::vector<float> w = o.initial_params;
  for (int t = 0; t < kSteps; ++t) {
    std::vector<float> lr_g(6);
    for (size_t i = 0; i < 6; ++i) lr_g[i] = kLr * (w[i] - 1.0f);
    const std::vector<float> moved = step(lr_g);
    for (size_t i = 0; i < 6; ++i) w[i] -= moved[i];
    for (size_t i = 6; i < 9; ++i) w[i] -= kLr * (w[i] - 1.0f);
  }
  ASSERT_EQ(server.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(server[i], w[i], 1e-6f) << i;
}

TEST(OwnCompressor, OneFileAndOneRegistrationLineRunInGd) {
  ASSERT_TRUE(compressorRegistry().add(meanSignInfo()).ok());
  // scale * mean|lr * g| * sign(g).
  expectGdMovesBy("meansign:scale=0.5", [](const std::vector<float>& lr_g) {
    float mean = 0.0f;
    for (float v : lr_g) mean += std::fabs(v);
    mean /= static_cast<float>(lr_g.size());
    std::vector<float> moved;
    for (float v : lr_g) moved.push_back(v > 0 ? kScale * mean : (v < 0 ? -kScale * mean : 0.0f));
    return moved;
  });
}

// int8: params {m = max|x|}; field f in [0, 254] is the value (f - 127) * m / 127, and
// 255 is invalid. A Code value and a wire tag no built-in format takes.
constexpr Code kInt8Code = static_cast<Code>(200);
constexpr uint8_t kInt8Tag = 200;

float int8Value(uint16_t f, float m) { return static_cast<float>(int{f} - 127) * m / 127.0f; }

uint16_t int8Field(float v, float m) {
  return static_cast<uint16_t>(127 + (m > 0 ? std::lround(v / m * 127.0f) : 0));
}

constexpr CodeFormat kInt8Format = {
    kInt8Code, "int8", kInt8Tag, "int8_levels",
    /*width=*/[](uint32_t) -> uint32_t { return 8; },
    /*check_arg=*/nullptr,
    /*check_params=*/[](const SegmentData& s, bool) { return checkParamCount(s, 1); },
    /*first_invalid=*/
    [](const SegmentData&, const uint16_t* f, size_t n, bool) {
      return static_cast<size_t>(std::find(f, f + n, 255) - f);
    },
    /*decode=*/
    [](const SegmentData& s, size_t, const uint16_t* f, size_t n, float* out) {
      for (size_t i = 0; i < n; ++i) out[i] = int8Value(f[i], s.params[0]);
    },
    /*add=*/nullptr};

class Int8 : public Compressor {
 public:
  void compress(absl::Span<const float> x, double /*density*/, const SelectContext& ctx,
                SegmentData* out) const override {
    startCoded(out, ctx.segment_id, x.size(), kInt8Code, 0);
    float m = 0.0f;
    for (float v : x) m = std::max(m, std::fabs(v));
    out->params = {m};
    for (size_t i = 0; i < x.size(); ++i) out->packed[i] = static_cast<uint8_t>(int8Field(x[i], m));
  }
  std::string name() const override { return "int8"; }
};

CompressorInfo int8Info() {
  return {"int8", "max|x| and a level in [-127, 127] per element", "a test's own", {},
          [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
            return std::make_unique<Int8>();
          },
          &kInt8Format};
}

TEST(OwnCompressor, ACodeOfItsOwnTravelsInItsOwnEncoding) {
  ASSERT_TRUE(compressorRegistry().add(int8Info()).ok());

  // On the wire: its tag, and the values its format decodes; an invalid field refused.
  const std::vector<float> x = {0.5f, -2.0f, 0.01f, 1.0f, 0.0f};
  auto c = compressorRegistry().make("int8");
  ASSERT_TRUE(c.ok()) << c.status();
  SegmentData s;
  (*c)->compress(x, 0, {}, &s);
  MessageHeader header;
  header.kind = MessageKind::kPush;
  absl::StatusOr<std::vector<uint8_t>> m = encodeMessage(header, {s});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)[kHeaderBytes], kInt8Tag);
  const DecodeLimits limits = DecodeLimits().allow(0, 5);
  absl::StatusOr<DecodedMessage> got = decodeMessage(*m, limits);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<float> sum(5, 0.0f);
  addCoded(absl::MakeSpan(sum), got->segments[0], 1.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(sum[i], int8Value(int8Field(x[i], 2.0f), 2.0f)) << i;
    EXPECT_NEAR(sum[i], x[i], 2.0f / 254) << i;
  }
  s.packed[1] = 255;
  m = encodeMessage(header, {s});
  EXPECT_FALSE(m.ok());  // the sender checks as the receiver does
  EXPECT_NE(m.status().message().find("int8 segment 0: invalid code 255 at element 1"),
            std::string::npos)
      << m.status();

  // Another format may not take its code or its tag.
  CodeFormat same_tag = kInt8Format;
  same_tag.code = static_cast<Code>(201);
  EXPECT_EQ(addCodeFormat(same_tag).code(), absl::StatusCode::kAlreadyExists);
  CodeFormat float_tag = kInt8Format;
  float_tag.code = static_cast<Code>(202);
  float_tag.wire_tag = 3;
  EXPECT_EQ(addCodeFormat(float_tag).code(), absl::StatusCode::kInvalidArgument);
  CodeFormat qsgd_tag = kInt8Format;  // the built-in formats hold theirs from the start
  qsgd_tag.code = static_cast<Code>(203);
  qsgd_tag.wire_tag = 9;
  EXPECT_EQ(addCodeFormat(qsgd_tag).code(), absl::StatusCode::kAlreadyExists);
  CodeFormat no_decoder = kInt8Format;
  no_decoder.code = static_cast<Code>(204);
  no_decoder.wire_tag = 204;
  no_decoder.decode = nullptr;
  EXPECT_EQ(addCodeFormat(no_decoder).code(), absl::StatusCode::kInvalidArgument);

  // A segment of a code no format defines, or whose fields would not fit 16 bits, is
  // refused with an error, not decoded.
  SegmentData unknown = s;
  unknown.code = static_cast<Code>(210);
  EXPECT_NE(validateCoded(unknown, true).message().find("segment 0: code 210 has no format"),
            std::string::npos);
  static constexpr CodeFormat kWide = {
      static_cast<Code>(205), "wide", 205, "wide",
      [](uint32_t) -> uint32_t { return 17; }, nullptr,
      [](const SegmentData&, bool) { return absl::OkStatus(); }, nullptr,
      [](const SegmentData&, size_t, const uint16_t*, size_t, float*) {}, nullptr};
  ASSERT_TRUE(addCodeFormat(kWide).ok());
  SegmentData wide;
  wide.code = kWide.code;
  wide.numel = 1;
  wide.packed.resize(3);
  EXPECT_NE(validateCoded(wide, true).message().find("fields of 17 bits, at most 16"),
            std::string::npos)
      << validateCoded(wide, true);

  // gd runs it by name: the compressed segment moves by decode(int8(lr * g)).
  expectGdMovesBy("int8", [](const std::vector<float>& lr_g) {
    float max = 0.0f;
    for (float v : lr_g) max = std::max(max, std::fabs(v));
    std::vector<float> moved;
    for (float v : lr_g) moved.push_back(int8Value(int8Field(v, max), max));
    return moved;
  });
}

}  // namespace
}  // namespace sparseps

#pragma once
// Helpers for the quantizer suites: a built-in compressor by spec, one compression, the
// server's decode (scatterAdd into zeros), a fixed-seed input mixing zeros, negative zeros,
// powers of two and tiny values, and the checks every coded segment gets (zero padding,
// the implementation's decode equal to code_reference.h's, the refusal of a bad code).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compressors/apply.h"
#include "compressors/codes.h"
#include "compressors/registry.h"
#include "tests/compressors/code_reference.h"

namespace sparseps::testing {

inline std::unique_ptr<Compressor> make(const std::string& spec) {
  auto made = makeRegisteredCompressor(spec);
  EXPECT_TRUE(made.ok()) << spec << ": " << made.status();
  return made.ok() ? std::move(*made) : nullptr;
}

inline SegmentData run(const Compressor& c, const std::vector<float>& x, SelectContext ctx = {},
                       double density = 0.1) {
  SegmentData s;
  c.compress(x, density, ctx, &s);
  return s;
}

// The decode path the server uses: scatterAdd into zeros.
inline std::vector<float> implDecode(const SegmentData& s) {
  std::vector<float> out(s.numel, 0.0f);
  scatterAdd(absl::MakeSpan(out), s, 1.0f);
  return out;
}

// n standard normal values from seed.
inline std::vector<float> normals(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

// Normal values with zeros, negative zeros, powers of two and tiny values mixed in.
inline std::vector<float> mixedInput(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::uniform_int_distribution<int> pick(0, 19);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    switch (pick(rng)) {
      case 0:
        x[i] = 0.0f;
        break;
      case 1:
        x[i] = -0.0f;
        break;
      case 2:
        x[i] = rng() & 1 ? 0.25f * scale : -2.0f * scale;
        break;
      case 3:
        x[i] = normal(rng) * 1e-6f;
        break;
      default:
        x[i] = normal(rng);
        break;
    }
  }
  return x;
}

inline constexpr size_t kSizes[] = {1,   7,    8,   9,
                                    100, 1000, 5003};  // 5003: past a 4096-element chunk

// Every padding bit after numel fields of width w is zero.
inline void expectZeroPadding(const SegmentData& s, uint32_t w) {
  const size_t bits = size_t{w} * s.numel;
  ASSERT_EQ(s.packed.size(), (bits + 7) / 8);
  if (bits % 8 != 0) {
    EXPECT_EQ(s.packed.back() >> (bits % 8), 0) << "padding bits";
  }
}

// The implementation's decode (scatterAdd) agrees with the reference decoder.
inline void expectDecodesAgree(const SegmentData& s, double rel = 1e-6) {
  const std::vector<double> ref = refDecode(s);
  const std::vector<float> got = implDecode(s);
  ASSERT_EQ(ref.size(), got.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_NEAR(got[i], ref[i], rel * std::fabs(ref[i]) + 1e-30) << "element " << i;
  }
}

// Validation (the decoder's check, without the value bound) refuses s, naming element at:
// what a non-finite input must come to.
inline void expectRefusedAt(const SegmentData& s, size_t at) {
  const absl::Status valid = validateCoded(s, false);
  EXPECT_FALSE(valid.ok());
  EXPECT_NE(std::string(valid.message()).find("element " + std::to_string(at)),
            std::string::npos)
      << valid;
}

}  // namespace sparseps::testing

// The host's VectorOps against plain loops: accumulateSegments (each segment's part of the
// flat vector takes y = a * y + b * (g + wd * w), the gaps between them stay as they were),
// updateAndSelect (the same after y[idx] *= c, then each part's top-k; its host form and
// the one a GPU's runs), and copyOut (host = scale * (x + wd * w) per copy). With wd == 0,
// accumulateSegments and copyOut do not read w. (tests/compressors/cuda/test_vector_ops.cc
// compares a GPU's accumulateSegments and copyOut with the host's.)

#include "compressors/vector_ops.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "compressors/topk.h"
#include "tests/compressors/test_util.h"

namespace sparseps {
namespace {

TEST(VectorOps, AccumulateSegmentsUpdatesEachSegmentAndNothingElse) {
  std::mt19937_64 rng(7);
  constexpr size_t kN = 1000;
  const std::vector<float> g = testing::makeInput(kN, testing::Dist::kNormal, &rng);
  const std::vector<float> w = testing::makeInput(kN, testing::Dist::kNormal, &rng);
  // Apart, in increasing offset order, with gaps before, between and after; one empty.
  const std::vector<SegmentSelect> segments = {
      {10, 100, 0.1, {}, nullptr}, {300, 0, 0.1, {}, nullptr}, {400, 250, 0.1, {}, nullptr}};
  for (const float wd : {0.25f, 0.0f}) {
    SCOPED_TRACE(wd);
    const std::vector<float> y0 = testing::makeInput(kN, testing::Dist::kNormal, &rng);
    std::vector<float> want = y0;
    for (const SegmentSelect& s : segments) {
      for (size_t j = s.offset; j < s.offset + s.numel; ++j) {
        want[j] = 0.9f * want[j] + 0.1f * (g[j] + wd * w[j]);
      }
    }
    std::vector<float> y = y0;
    // With wd == 0, w is left out altogether.
    hostVectorOps()->accumulateSegments(
        absl::MakeSpan(y), 0.9f, 0.1f, g,
        wd == 0.0f ? absl::Span<const float>() : absl::MakeConstSpan(w), wd, segments);
    EXPECT_EQ(y, want);
  }
}

// The host's streamed form and the one every other memory runs (VectorOps' own, called
// here on host memory) against a plain loop and the plain top-k of each updated part.
TEST(VectorOps, UpdateAndSelectUpdatesAndSelectsEachSegmentAndNothingElse) {
  std::mt19937_64 rng(13);
  constexpr size_t kN = 5000;
  const std::vector<float> g = testing::makeInput(kN, testing::Dist::kNormal, &rng);
  const std::vector<float> w = testing::makeInput(kN, testing::Dist::kNormal, &rng);
  const std::vector<float> y0 = testing::makeInput(kN, testing::Dist::kNormal, &rng);
  // Positions scaled by c: in both segments, none in the gaps.
  const std::vector<uint32_t> idx = {100, 101, 250, 1999, 3000, 3100, 4400};
  constexpr float kC = 1.0f / 0.7f, kA = 1.0f, kB = 0.1f, kWd = 0.01f;
  std::vector<float> want = y0;
  for (uint32_t i : idx) want[i] *= kC;
  const ExactTopkCompressor topk;
  std::vector<SegmentData> want_out(2);
  const size_t offsets[] = {100, 3000}, lengths[] = {1900, 1500};
  for (size_t s = 0; s < 2; ++s) {
    for (size_t j = offsets[s]; j < offsets[s] + lengths[s]; ++j) {
      want[j] = kA * want[j] + kB * (g[j] + kWd * w[j]);
    }
    topk.compress(absl::MakeConstSpan(want).subspan(offsets[s], lengths[s]), 0.01, {},
                  &want_out[s]);
  }
  for (const bool streamed : {true, false}) {
    SCOPED_TRACE(streamed ? "host's streamed form" : "VectorOps' own");
    std::vector<float> y = y0;
    std::vector<SegmentData> out(2);
    const std::vector<SegmentSelect> segments = {{offsets[0], lengths[0], 0.01, {}, &out[0]},
                                                 {offsets[1], lengths[1], 0.01, {}, &out[1]}};
    const VectorOps& ops = *hostVectorOps();
    if (streamed) {
      ops.updateAndSelect(absl::MakeSpan(y), idx, kC, kA, kB, g, w, kWd, topk, segments);
    } else {
      ops.VectorOps::updateAndSelect(absl::MakeSpan(y), idx, kC, kA, kB, g, w, kWd, topk, segments);
    }
    EXPECT_EQ(y, want);
    for (size_t s = 0; s < 2; ++s) {
      EXPECT_EQ(out[s].indices, want_out[s].indices) << "segment " << s;
      EXPECT_EQ(out[s].values, want_out[s].values) << "segment " << s;
    }
  }
}

TEST(VectorOps, CopyOutFoldsEachCopyOnItsWayOut) {
  std::mt19937_64 rng(11);
  constexpr size_t kN = 300;
  const std::vector<float> x = testing::makeInput(kN, testing::Dist::kNormal, &rng);
  const std::vector<float> w = testing::makeInput(kN, testing::Dist::kNormal, &rng);
  for (const float wd : {0.25f, 0.0f}) {
    SCOPED_TRACE(wd);
    // Two parts of x, scaled apart, into two host vectors; the rest of x is not copied.
    std::vector<float> first(100, -1.0f), second(150, -1.0f);
    std::vector<float> want_first(100), want_second(150);
    for (size_t j = 0; j < 100; ++j) want_first[j] = 0.5f * (x[20 + j] + wd * w[20 + j]);
    for (size_t j = 0; j < 150; ++j) want_second[j] = 1.0f * (x[150 + j] + wd * w[150 + j]);
    auto part = [&](const std::vector<float>& v, size_t at, size_t n) {
      return wd == 0.0f ? absl::Span<const float>() : absl::MakeConstSpan(v).subspan(at, n);
    };
    const std::vector<VectorOps::HostCopy> copies = {
        {absl::MakeSpan(first), absl::MakeConstSpan(x).subspan(20, 100), 0.5f, part(w, 20, 100)},
        {absl::MakeSpan(second), absl::MakeConstSpan(x).subspan(150, 150), 1.0f,
         part(w, 150, 150)}};
    hostVectorOps()->copyOut(copies, wd);
    EXPECT_EQ(first, want_first);
    EXPECT_EQ(second, want_second);
  }
}

}  // namespace
}  // namespace sparseps

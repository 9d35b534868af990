#include "compressors/terngrad.h"

#include <algorithm>
#include <cmath>

#include "compressors/codes.h"
#include "compressors/kernels/bit_packing.h"
#include "compressors/kernels/element_random.h"
#include "compressors/kernels/magnitude_key.h"
#include "compressors/kernels/simd.h"
#include "compressors/registry.h"
#include "compressors/select_seed.h"

namespace sparseps {
namespace {

constexpr size_t kChunk = 4096;

// max |x| as the largest magnitudeKey (magnitude_key.h): NaN sorts above infinity, so a
// NaN in x makes the scale NaN (the decoder refuses it) instead of being skipped by a
// float max and sent as 0.
SPARSEPS_MULTIVERSION float maxMagnitude(const float* x, size_t n) {
  uint32_t lanes[16] = {};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (size_t l = 0; l < 16; ++l) lanes[l] = std::max(lanes[l], magnitudeKey(x[i + l]));
  }
  uint32_t m = 0;
  for (; i < n; ++i) m = std::max(m, magnitudeKey(x[i]));
  for (uint32_t lane : lanes) m = std::max(m, lane);
  return keyToFloat(m);
}

SPARSEPS_MULTIVERSION_WIDE(
    void ternarize(const float* x, uint32_t n, uint32_t first, float inv_scale, uint64_t bits,
                   uint16_t* fields),
    {
      for (uint32_t i = 0; i < n; ++i) {  // 32-bit positions (see natural.cc)
        const bool keep = elementUniform(bits, first + i) < std::fabs(x[i]) * inv_scale;
        fields[i] = static_cast<uint16_t>(keep ? (x[i] < 0 ? 2 : 1) : 0);
      }
    })

SPARSEPS_MULTIVERSION void decodeTernaryRun(const uint16_t* f, size_t n, float scale,
                                            float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = f[i] == 1 ? scale : (f[i] == 2 ? -scale : 0.0f);
}

// kTernary: 2 bits per element and params {scale}; field 0 is 0, 1 is +scale, 2 is
// -scale, and 3 is invalid.
constexpr CodeFormat kTernaryFormat = {
    Code::kTernary, "ternary", /*wire_tag=*/8, "ternary_2",
    /*width=*/[](uint32_t) -> uint32_t { return 2; },
    /*check_arg=*/nullptr,
    /*check_params=*/[](const SegmentData& s, bool) { return checkParamCount(s, 1); },
    /*first_invalid=*/
    [](const SegmentData&, const uint16_t* f, size_t n, bool) {
      return static_cast<size_t>(std::find(f, f + n, 3) - f);
    },
    /*decode=*/
    [](const SegmentData& s, size_t, const uint16_t* f, size_t n, float* out) {
      decodeTernaryRun(f, n, s.params[0], out);
    },
    /*add=*/nullptr};

}  // namespace

void TernGradCompressor::compress(absl::Span<const float> x, double /*density*/,
                                  const SelectContext& ctx, SegmentData* out) const {
  const size_t n = x.size();
  startCoded(out, ctx.segment_id, n, Code::kTernary, 0);
  const float scale = maxMagnitude(x.data(), n);
  out->params.assign(1, scale);
  const float inv = scale > 0 ? 1.0f / scale : 0.0f;
  const uint64_t bits = selectSeed(ctx);
  uint16_t fields[kChunk];
  for (size_t first = 0; first < n; first += kChunk) {
    const size_t m = std::min(kChunk, n - first);
    ternarize(x.data() + first, static_cast<uint32_t>(m), static_cast<uint32_t>(first), inv, bits,
              fields);
    packFields(fields, m, 2, first, out->packed.data());
  }
}

namespace builtin_compressors {

std::vector<CompressorInfo> terngrad() {
  return {{"terngrad",
           "max |x| of the segment and a stochastic ternary {-1, 0, +1} per element (unbiased)",
           "Wen et al., TernGrad: Ternary Gradients to Reduce Communication in Distributed Deep "
           "Learning, NeurIPS 2017",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<TernGradCompressor>();
           },
           &kTernaryFormat}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

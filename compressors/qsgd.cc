#include "compressors/qsgd.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "absl/numeric/bits.h"
#include "absl/strings/str_cat.h"
#include "compressors/codes.h"
#include "compressors/kernels/bit_packing.h"
#include "compressors/kernels/element_random.h"
#include "compressors/kernels/simd.h"
#include "compressors/registry.h"
#include "compressors/select_seed.h"

namespace sparseps {
namespace {

constexpr size_t kChunk = 4096;  // fields made in cache, then packed (a multiple of 8)

SPARSEPS_MULTIVERSION float sumOfSquares(const float* x, size_t n) {
  float lanes[16] = {};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (size_t l = 0; l < 16; ++l) lanes[l] += x[i + l] * x[i + l];
  }
  float sum = 0;
  for (; i < n; ++i) sum += x[i] * x[i];
  for (float lane : lanes) sum += lane;
  return sum;
}

// The norm of x: its sum of squares in float lanes, and again in double where that
// overflowed (|x| near 2^64 squares past the float range) or fell below the normal
// floats (|x| under about 1e-19 squares to subnormals or zero).
float bucketNorm(const float* x, size_t n) {
  const float sum = sumOfSquares(x, n);
  if (std::isfinite(sum) && sum >= FLT_MIN) return std::sqrt(sum);
  double wide = 0;
  for (size_t i = 0; i < n; ++i) wide += double{x[i]} * x[i];
  return static_cast<float>(std::sqrt(wide));
}

// |x| * scale + u is rounded twice, a product then a sum, in every clone and at every
// position: no fused multiply-add (which the AVX-512 clone would use in some paths and
// not others), so that a level depends only on x, u and the scale.
// GCC takes it as the function's attribute, clang as a pragma opening the body (a
// directive cannot stand inside the macro's arguments).
#if defined(__clang__)
#define SPARSEPS_NO_CONTRACT
#define SPARSEPS_NO_CONTRACT_BODY _Pragma("clang fp contract(off)")
#elif defined(__GNUC__)
#define SPARSEPS_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#define SPARSEPS_NO_CONTRACT_BODY
#else
#define SPARSEPS_NO_CONTRACT
#define SPARSEPS_NO_CONTRACT_BODY
#endif

SPARSEPS_MULTIVERSION_WIDE(
    SPARSEPS_NO_CONTRACT void quantize(const float* x, uint32_t n, uint32_t first, float scale,
                                       uint32_t levels, uint32_t sign_shift, uint64_t bits,
                                       uint16_t* fields),
    {
      SPARSEPS_NO_CONTRACT_BODY
      const float top = static_cast<float>(levels);
      // floor(min(v, s)) = min(floor(v), s) for an integer s, and the conversion truncates,
      // which is the floor of v >= 0: no std::floor, which GCC does not vectorize (it may
      // not drop floor's inexact exception under the default -ftrapping-math).
      for (uint32_t i = 0; i < n; ++i) {  // 32-bit positions (see natural.cc)
        const float level =
            std::min(std::fabs(x[i]) * scale + elementUniform(bits, first + i), top);
        fields[i] = static_cast<uint16_t>(static_cast<uint32_t>(level) |
                                          (static_cast<uint32_t>(x[i] < 0) << sign_shift));
      }
    })

uint32_t levelBits(uint32_t levels) { return static_cast<uint32_t>(absl::bit_width(levels)); }

SPARSEPS_MULTIVERSION void decodeLevels(const uint16_t* f, size_t n, uint32_t level_bits,
                                        float unit, float* out) {
  const uint32_t mask = (1u << level_bits) - 1;
  for (size_t i = 0; i < n; ++i) {
    const float v = unit * static_cast<float>(f[i] & mask);
    out[i] = (f[i] >> level_bits) ? -v : v;
  }
}

absl::Status checkLevels(uint32_t levels) {
  if (levels == 0 || levels > kMaxQsgdLevels) {
    return absl::InvalidArgumentError(
        absl::StrCat(levels, " levels, must be in [1, ", kMaxQsgdLevels, "]"));
  }
  return absl::OkStatus();
}

absl::Status checkNorms(const SegmentData& s, bool) {
  if (absl::Status st = checkBuckets(s, 1); !st.ok()) return st;
  for (float norm : s.params) {
    if (norm < 0) return absl::InvalidArgumentError(absl::StrCat("negative norm ", norm));
  }
  return absl::OkStatus();
}

size_t firstLevelAbove(const SegmentData& s, const uint16_t* f, size_t n, bool) {
  const uint32_t mask = (1u << levelBits(s.code_arg)) - 1;
  for (size_t i = 0; i < n; ++i) {
    if ((f[i] & mask) > s.code_arg) return i;
  }
  return n;
}

void decodeQsgd(const SegmentData& s, size_t first, const uint16_t* fields, size_t n,
                float* out) {
  const uint32_t level_bits = levelBits(s.code_arg);
  forEachBucketRun(s, 1, first, n, [&](size_t b, size_t i, size_t run) {
    decodeLevels(fields + i, run, level_bits, s.params[b] / static_cast<float>(s.code_arg),
                 out + i);
  });
}

// kQsgd: code_arg is the levels s, a field is 1 + b bits (b = bit_width(s)): the level l
// in the low b bits (l <= s) and the sign above it; params are one norm per bucket
// (checkBuckets). Element i is (-1)^sign * norm[its bucket] * l / s.
constexpr CodeFormat kQsgdFormat = {
    Code::kQsgd, "qsgd", /*wire_tag=*/9, "qsgd",
    /*width=*/[](uint32_t levels) { return 1 + levelBits(levels); },
    /*check_arg=*/checkLevels,
    /*check_params=*/checkNorms,
    /*first_invalid=*/firstLevelAbove,
    /*decode=*/decodeQsgd,
    /*add=*/nullptr};

}  // namespace

absl::Status QsgdOptions::validate() const {
  if (absl::Status s = checkLevels(levels); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("QsgdOptions.levels: ", s.message()));
  }
  return absl::OkStatus();
}

void QsgdCompressor::compress(absl::Span<const float> x, double /*density*/,
                              const SelectContext& ctx, SegmentData* out) const {
  const size_t n = x.size();
  const uint32_t s = options_.levels;
  startCoded(out, ctx.segment_id, n, Code::kQsgd, s);
  const size_t buckets =
      options_.bucket == 0 || n == 0 ? 1 : (n + options_.bucket - 1) / options_.bucket;
  const size_t bucket = std::max<size_t>(bucketLength(n, buckets), 1);
  out->params.assign(buckets, 0.0f);
  const uint32_t width = kQsgdFormat.width(s);
  const uint32_t sign_shift = levelBits(s);
  const uint64_t bits = selectSeed(ctx);
  uint16_t fields[kChunk];
  size_t normed = 0;  // buckets whose norm is known
  for (size_t first = 0; first < n; first += kChunk) {
    const size_t end = std::min(n, first + kChunk);
    // Norms of the buckets this chunk touches (a small bucket is read again from cache).
    for (; normed <= (end - 1) / bucket; ++normed) {
      const size_t b0 = normed * bucket, b1 = std::min(n, b0 + bucket);
      out->params[normed] = bucketNorm(x.data() + b0, b1 - b0);
    }
    for (size_t i = first; i < end;) {
      const size_t b = i / bucket;
      const size_t stop = std::min(end, (b + 1) * bucket);
      const float norm = out->params[b];
      const float scale = norm > 0 ? static_cast<float>(s) / norm : 0.0f;
      quantize(x.data() + i, static_cast<uint32_t>(stop - i), static_cast<uint32_t>(i), scale, s,
               sign_shift, bits, fields + (i - first));
      i = stop;
    }
    packFields(fields, end - first, width, first, out->packed.data());
  }
}

namespace builtin_compressors {

std::vector<CompressorInfo> qsgd() {
  return {{"qsgd",
           "per bucket: norm and sign with a level in [0, s], stochastically rounded (unbiased)",
           "Alistarh et al., QSGD: Communication-Efficient SGD via Gradient Quantization and "
           "Encoding, NeurIPS 2017",
           {{"levels", "16", "s, quantization levels (1 + bit_width(s) bits per element)"},
            {"bucket", "512", "elements per norm (0: one norm per segment)"}},
           [](OptionReader& r) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             QsgdOptions o;
             if (auto s = r.read("levels", &o.levels); !s.ok()) return s;
             if (auto s = r.read("bucket", &o.bucket); !s.ok()) return s;
             if (auto s = o.validate(); !s.ok()) return s;
             return std::make_unique<QsgdCompressor>(o);
           },
           &kQsgdFormat}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

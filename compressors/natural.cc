#include "compressors/natural.h"

#include <algorithm>
#include <cstring>

#include "compressors/codes.h"
#include "compressors/kernels/bit_packing.h"
#include "compressors/kernels/element_random.h"
#include "compressors/kernels/simd.h"
#include "compressors/registry.h"
#include "compressors/select_seed.h"

namespace sparseps {
namespace {

constexpr size_t kChunk = 4096;

SPARSEPS_MULTIVERSION_WIDE(
    void roundToPowers(const float* x, uint32_t n, uint32_t first, uint64_t bits,
                       uint16_t* fields),
    {
      // 32-bit counters: a size_t index would make the vector loop widen every position
      // to 64 bits before hashing it.
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t word;
        std::memcpy(&word, &x[i], sizeof word);
        const uint32_t sign = word >> 31;
        const uint32_t exponent = (word >> 23) & 0xff;
        // Up with probability fraction = mantissa / 2^23: uniform = draw / 2^24 < fraction,
        // compared in integers.
        const bool up = elementDraw24(bits, first + i) < ((word & 0x7fffff) << 1);
        // Exponent 0 (zero, subnormal) rounds to 0 or to 2^-126; 254 cannot round up to 255.
        // 255 (an infinity or a NaN: a diverged gradient) stays 255, a code every decoder
        // refuses.
        const uint32_t e =
            exponent == 255u ? 255u : std::min<uint32_t>(exponent + (up ? 1u : 0u), 254u);
        fields[i] = static_cast<uint16_t>(e | ((e != 0 ? sign : 0u) << 8));
      }
    })

// Sign bit 8 and exponent e in the low byte are an f32's sign and exponent with a zero
// mantissa: 2^(e - 127), and e = 0 is zero.
SPARSEPS_MULTIVERSION void decodeNatural(const uint16_t* f, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t word = (uint32_t{f[i]} & 0xffu) << 23 | (uint32_t{f[i]} >> 8) << 31;
    std::memcpy(&out[i], &word, sizeof word);
  }
}

// kNatural: 9 bits per element and no params; the low 8 bits e give 0 for e = 0, else
// (-1)^bit8 * 2^(e - 127); e = 255 is invalid.
constexpr CodeFormat kNaturalFormat = {
    Code::kNatural, "natural", /*wire_tag=*/10, "natural_9",
    /*width=*/[](uint32_t) -> uint32_t { return 9; },
    /*check_arg=*/nullptr,
    /*check_params=*/[](const SegmentData& s, bool) { return checkParamCount(s, 0); },
    /*first_invalid=*/
    [](const SegmentData&, const uint16_t* f, size_t n, bool bound_values) {
      return firstInvalidExponent(f, n, 0, bound_values);
    },
    /*decode=*/
    [](const SegmentData&, size_t, const uint16_t* f, size_t n, float* out) {
      decodeNatural(f, n, out);
    },
    /*add=*/nullptr};

}  // namespace

void NaturalCompressor::compress(absl::Span<const float> x, double /*density*/,
                                 const SelectContext& ctx, SegmentData* out) const {
  const size_t n = x.size();
  startCoded(out, ctx.segment_id, n, Code::kNatural, 0);
  const uint64_t bits = selectSeed(ctx);
  uint16_t fields[kChunk];
  for (size_t first = 0; first < n; first += kChunk) {
    const size_t m = std::min(kChunk, n - first);
    roundToPowers(x.data() + first, static_cast<uint32_t>(m), static_cast<uint32_t>(first), bits,
                  fields);
    packFields(fields, m, 9, first, out->packed.data());
  }
}

namespace builtin_compressors {

std::vector<CompressorInfo> natural() {
  return {{"natural",
           "sign and a power of two per element, stochastically rounded (unbiased), 9 bits",
           "Horvath et al., Natural Compression for Distributed Deep Learning, MSML 2022",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<NaturalCompressor>();
           },
           &kNaturalFormat}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

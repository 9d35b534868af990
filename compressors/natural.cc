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
           }}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

#include "compressors/natural.h"

#include <algorithm>
#include <cstring>

#include "compressors/codes.h"
#include "compressors/element_random.h"
#include "compressors/select_seed.h"
#include "compressors/simd.h"

namespace sparseps {
namespace {

constexpr size_t kChunk = 4096;

SPARSEPS_MULTIVERSION_WIDE(
    void roundToPowers(const float* x, size_t n, uint32_t first, uint64_t bits,
                       uint16_t* fields),
    {
      for (size_t i = 0; i < n; ++i) {
        uint32_t word;
        std::memcpy(&word, &x[i], sizeof word);
        const uint32_t sign = word >> 31;
        const uint32_t exponent = (word >> 23) & 0xff;
        const float fraction = static_cast<float>(word & 0x7fffff) * (1.0f / 8388608.0f);
        const bool up = elementUniform(bits, first + static_cast<uint32_t>(i)) < fraction;
        // Exponent 0 (zero, subnormal) rounds to 0 or to 2^-126; 254 cannot round up to 255.
        const uint32_t e = std::min<uint32_t>(exponent + (up ? 1u : 0u), 254u);
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
    roundToPowers(x.data() + first, m, static_cast<uint32_t>(first), bits, fields);
    packFields(fields, m, 9, first, out->packed.data());
  }
}

CompressorInfo naturalInfo() {
  return {"natural", "sign and a power of two per element, stochastically rounded (unbiased), 9 bits",
          "Horvath et al., Natural Compression for Distributed Deep Learning, MSML 2022",
          {},
          [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
            return std::make_unique<NaturalCompressor>();
          }};
}

}  // namespace sparseps

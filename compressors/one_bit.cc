#include "compressors/one_bit.h"

#include <algorithm>
#include <cstring>

#include "compressors/kernels/sign_bits.h"
#include "compressors/kernels/simd.h"
#include "compressors/registry.h"
#include "compressors/sign_sgd.h"

namespace sparseps {
namespace {

// The longest row whose bits are packed while it is still in cache (256 KiB of floats).
constexpr size_t kCachedRow = size_t{1} << 16;

struct SignedSums {
  double positive = 0, negative = 0;
  size_t negatives = 0;
};

SPARSEPS_MULTIVERSION SignedSums signedSums(const float* x, size_t n) {
  float pos[16] = {}, neg[16] = {};
  uint32_t count[16] = {};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (size_t l = 0; l < 16; ++l) {
      // Each side gets x or +0.0f, picked with a mask rather than a select: GCC keeps a
      // float select as a branch (unpredictable on random signs) and then vectorizes
      // nothing; the mask vectorizes, adding exactly what the select would.
      const uint32_t mask = 0u - static_cast<uint32_t>(x[i + l] < 0);
      uint32_t bits;
      std::memcpy(&bits, &x[i + l], sizeof bits);
      const uint32_t neg_bits = bits & mask, pos_bits = bits & ~mask;
      float to_neg, to_pos;
      std::memcpy(&to_neg, &neg_bits, sizeof to_neg);
      std::memcpy(&to_pos, &pos_bits, sizeof to_pos);
      pos[l] += to_pos;
      neg[l] += to_neg;
      count[l] += mask & 1u;
    }
  }
  SignedSums s;
  for (size_t l = 0; l < 16; ++l) {
    s.positive += pos[l];
    s.negative += neg[l];
    s.negatives += count[l];
  }
  for (; i < n; ++i) {
    if (x[i] < 0) {
      s.negative += x[i];
      ++s.negatives;
    } else {
      s.positive += x[i];
    }
  }
  return s;
}

}  // namespace

void OneBitCompressor::compress(absl::Span<const float> x, double /*density*/,
                                const SelectContext& ctx, SegmentData* out) const {
  const size_t n = x.size();
  startCoded(out, ctx.segment_id, n, Code::kSign, 0);
  const bool by_row = ctx.rows > 1 && n % ctx.rows == 0;
  const size_t groups = by_row ? ctx.rows : 1;
  const size_t length = groups == 1 ? n : n / groups;
  out->params.resize(2 * groups);
  // Rows that start on a byte of the codes and fit in the L2 cache have their bits packed
  // right after their sums, while they are still in cache: one pass over x from memory.
  const bool pack_by_row = length % 8 == 0 && length <= kCachedRow;
  for (size_t g = 0; g < groups; ++g) {
    const SignedSums s = signedSums(x.data() + g * length, length);
    const size_t positives = length - s.negatives;
    out->params[2 * g] = positives ? static_cast<float>(s.positive / positives) : 0.0f;
    out->params[2 * g + 1] = s.negatives ? static_cast<float>(s.negative / s.negatives) : 0.0f;
    if (pack_by_row) {
      packSignBits(x.subspan(g * length, length), out->packed.data() + g * length / 8);
    }
  }
  if (!pack_by_row) packSignBits(x, out->packed.data());
}

namespace builtin_compressors {

std::vector<CompressorInfo> one_bit() {
  return {{"onebit",
           "one bit per element (x >= 0 or not); per row, the means of its non-negative and of "
           "its negative elements",
           "Seide et al., 1-Bit Stochastic Gradient Descent and its Application to Data-Parallel "
           "Distributed Training of Speech DNNs, Interspeech 2014",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<OneBitCompressor>();
           },
           &kSignFormat}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

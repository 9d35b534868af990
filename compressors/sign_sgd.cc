#include "compressors/sign_sgd.h"

#include <algorithm>
#include <cmath>

#include "compressors/kernels/sign_bits.h"
#include "compressors/kernels/simd.h"
#include "compressors/registry.h"

namespace sparseps {
namespace {

// sumOfMagnitudes flushes its float lanes to the double sum every kFlush elements.
constexpr size_t kFlush = size_t{1} << 16;
// Elements per block: the block is summed, then its sign bits packed while it is still in
// the L2 cache, so x is read from memory once. A multiple of kFlush, so that summing block
// by block flushes where one call over the whole segment would: the same sum, bit for bit.
constexpr size_t kBlock = kFlush;
static_assert(kBlock % kFlush == 0 && kBlock % 8 == 0);

// GCC's loop vectorizer takes the loop over i, 16 elements of 16 lanes at a time, and
// shuffles them into place: three times slower than its basic-block vectorizer, which
// makes the 16 lanes one vector (the same additions in the same order either way).
#if defined(__GNUC__) && !defined(__clang__)
#define SPARSEPS_LANES_AS_ONE_VECTOR __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define SPARSEPS_LANES_AS_ONE_VECTOR
#endif

// sum + the magnitudes of x[0, n), added as one call over a whole segment adds them.
SPARSEPS_MULTIVERSION SPARSEPS_LANES_AS_ONE_VECTOR double sumOfMagnitudes(const float* x, size_t n,
                                                                         double sum) {
  float lanes[16] = {};
  size_t i = 0;
  // Lanes of floats for speed, flushed to a double every 64 Ki elements for accuracy.
  while (i + 16 <= n) {
    const size_t stop = std::min(n - (n - i) % 16, i + kFlush);
    for (; i < stop; i += 16) {
      for (size_t l = 0; l < 16; ++l) lanes[l] += std::fabs(x[i + l]);
    }
    for (float& lane : lanes) {
      sum += lane;
      lane = 0;
    }
  }
  for (; i < n; ++i) sum += std::fabs(x[i]);
  return sum;
}

SPARSEPS_MULTIVERSION void decodeSignRun(const uint16_t* f, size_t n, float v0, float v1,
                                         float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = f[i] ? v1 : v0;
}

void decodeSign(const SegmentData& s, size_t first, const uint16_t* fields, size_t n,
                float* out) {
  forEachBucketRun(s, 2, first, n, [&](size_t b, size_t i, size_t run) {
    decodeSignRun(fields + i, run, s.params[2 * b], s.params[2 * b + 1], out + i);
  });
}

}  // namespace

const CodeFormat kSignFormat = {
    Code::kSign, "sign", /*wire_tag=*/7, "sign_1",
    /*width=*/[](uint32_t) -> uint32_t { return 1; },
    /*check_arg=*/nullptr,
    /*check_params=*/[](const SegmentData& s, bool) { return checkBuckets(s, 2); },
    /*first_invalid=*/nullptr,  // both bit values are valid
    /*decode=*/decodeSign,
    /*add=*/nullptr};

void SignSgdCompressor::compress(absl::Span<const float> x, double /*density*/,
                                 const SelectContext& ctx, SegmentData* out) const {
  const size_t n = x.size();
  startCoded(out, ctx.segment_id, n, Code::kSign, 0);
  double sum = 0;
  for (size_t first = 0; first < n; first += kBlock) {
    const size_t m = std::min(kBlock, n - first);
    sum = sumOfMagnitudes(x.data() + first, m, sum);
    packSignBits(x.subspan(first, m), out->packed.data() + first / 8);
  }
  const float scale = n == 0 ? 0.0f : static_cast<float>(sum / n);
  out->params = {scale, -scale};
}

namespace builtin_compressors {

std::vector<CompressorInfo> sign_sgd() {
  return {{"signsgd", "one sign bit per element, scaled by the mean magnitude ||x||_1 / d",
           "Karimireddy et al., Error Feedback Fixes SignSGD and other Gradient Compression "
           "Schemes, ICML 2019 (signSGD: Bernstein et al., ICML 2018)",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<SignSgdCompressor>();
           },
           &kSignFormat}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

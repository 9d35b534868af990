#pragma once
// Exact magnitude top-k of one segment: the k = max(1, floor(numel * r)) largest |x|,
// the topk(x, r) of docs/methods.md used by gradient dropping, DGC and DGS.
//
// Order (magnitude_key.h): -0 == +0; +-Inf above every finite value; NaN above +-Inf, so a
// diverged gradient is selected and travels (the wire decoder then rejects it loudly)
// instead of being silently kept in a residual. Among equal magnitudes the lower index
// wins, so the result is a deterministic function of the input.
//
// Algorithm (sample-select): a strided sample of the magnitudes brackets the k-th largest
// from below with a margin of 4 standard deviations of the sample rank; one vectorized
// streaming pass keeps everything at or above the bracket (a little more than k
// elements); an exact radix select on that small candidate set finishes. If the bracket
// misses (fewer than k candidates), a two-pass radix select over the whole segment does.
// If the sample's bracket is zero (fewer than about k nonzeros, as in a residual few
// updates touched), one pass collects the nonzeros and the lowest-index zeros fill up to k.
// The sample is read before the streaming pass, so the same algorithm selects from a
// vector made while it is read (compressStreamed): the pass that makes it is the pass
// that selects from it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "compressors/compressor.h"
#include "compressors/kernels/simd.h"

namespace sparseps {

// indices: increasing positions of the min(k, x.size()) largest magnitudes; values: x there.
void topkExact(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
               std::vector<float>* values, SimdLevel level = cpuSimdLevel());

// Compressor: exact top-k with k = topkCount(numel, density).
class ExactTopkCompressor : public Compressor {
 public:
  explicit ExactTopkCompressor(SimdLevel level = cpuSimdLevel()) : level_(level) {}
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  // One pass: each chunk of x is scanned against the sample's bracket as it is produced.
  void compressStreamed(StreamedVector& x, double density, const SelectContext& ctx,
                        SegmentData* out) const override;
  // A device's segments in one segmented radix select; host segments one after another.
  void compressSegments(absl::Span<const float> x,
                        absl::Span<const SegmentSelect> segments) const override;
  std::string name() const override { return "topk"; }

 private:
  SimdLevel level_;
};

}  // namespace sparseps

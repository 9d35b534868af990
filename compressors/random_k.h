#pragma once
// Random-k: k = topkCount(numel, r) distinct positions drawn uniformly, reproducible from
// (seed, segment id, step) through selectSeed (select_seed.h), so a receiver that knows
// the context regenerates the indices and only the values need travel. The values are
// sent unscaled (pair it with error feedback, or scale by numel / k at the receiver for an
// unbiased estimate).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "compressors/compressor.h"

namespace sparseps {

// Fills out with k distinct indices in [0, numel), strictly increasing; a pure function of
// the arguments. Floyd's algorithm for small k, selection sampling (Knuth's Algorithm S)
// for large k. out's capacity is reused and Floyd's set is kept per thread (up to 2^16
// draws), so a receiver regenerating the indices of every message allocates nothing once
// warm.
void randomKIndices(size_t numel, size_t k, uint64_t random_bits, std::vector<uint32_t>* out);

class RandomKCompressor : public Compressor {
 public:
  void compress(absl::Span<const float> x, double density, const SelectContext& ctx,
                SegmentData* out) const override;
  std::string name() const override { return "randomk"; }
};

}  // namespace sparseps

#include "compressors/random_k.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "compressors/registry.h"
#include "compressors/segment_spec.h"
#include "compressors/select_seed.h"

namespace sparseps {

void randomKIndices(size_t numel, size_t k, uint64_t random_bits, std::vector<uint32_t>* out) {
  k = std::min(k, numel);
  out->clear();
  out->reserve(k);
  uint64_t state = random_bits;
  if (k * 16 <= numel) {
    // Floyd: for j = numel-k .. numel-1 draw t in [0, j]; take t, or j if t was taken.
    // The set is the thread's, emptied by erasing what was taken (clear() would free its
    // memory), and freed after a k above kKeptDraws. Emptied on entry too, in case an
    // earlier call was cut short by an exception.
    constexpr size_t kKeptDraws = size_t{1} << 16;
    thread_local absl::flat_hash_set<uint32_t> taken;
    if (!taken.empty()) taken.clear();
    taken.reserve(k);
    for (size_t j = numel - k; j < numel; ++j) {
      const uint32_t t = static_cast<uint32_t>(boundedRandom(&state, j + 1));
      const uint32_t pick = taken.insert(t).second ? t : static_cast<uint32_t>(j);
      if (pick != t) taken.insert(pick);
      out->push_back(pick);
    }
    if (k > kKeptDraws) {
      taken = absl::flat_hash_set<uint32_t>();
    } else {
      for (uint32_t i : *out) taken.erase(i);
    }
    std::sort(out->begin(), out->end());
  } else {
    // Algorithm S: keep i with probability (still needed) / (still left).
    size_t needed = k;
    for (size_t i = 0; i < numel && needed > 0; ++i) {
      if (boundedRandom(&state, numel - i) < needed) {
        out->push_back(static_cast<uint32_t>(i));
        --needed;
      }
    }
  }
}

void RandomKCompressor::compress(absl::Span<const float> x, double density,
                                 const SelectContext& ctx, SegmentData* out) const {
  out->startSparse(ctx.segment_id, x.size());
  const uint64_t seed = selectSeed(ctx);
  randomKIndices(x.size(), topkCount(x.size(), density), seed, &out->indices);
  out->index_seed = seed;  // the receiver regenerates the indices: only the values travel
  out->values.resize(out->indices.size());
  for (size_t j = 0; j < out->indices.size(); ++j) out->values[j] = x[out->indices[j]];
}

namespace builtin_compressors {

std::vector<CompressorInfo> random_k() {
  return {{"randomk",
           "density * numel elements drawn uniformly from a seed sender and receiver share: only "
           "the values and the 8-byte seed travel",
           "Stich et al., Sparsified SGD with Memory, NeurIPS 2018",
           {},
           [](OptionReader&) -> absl::StatusOr<std::unique_ptr<Compressor>> {
             return std::make_unique<RandomKCompressor>();
           }}};
}

}  // namespace builtin_compressors

}  // namespace sparseps

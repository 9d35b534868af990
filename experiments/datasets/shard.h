#pragma once
// Which training examples a worker sees, and in which order. Worker i of n trains on shard i:
// the i-th of n near-equal contiguous pieces of one seeded permutation of the training set, so
// shards are disjoint and together cover it. Every epoch the shard is reshuffled with a seed
// derived from (seed + epoch, shard). Torch-free.

#include <cstdint>
#include <vector>

namespace sparseps {

// Indices of shard `shard` of `num_shards` over [0, n), in permutation order. Shard sizes
// differ by at most one. Empty when shard is not in [0, num_shards).
std::vector<int64_t> shardIndices(int64_t n, int shard, int num_shards, uint64_t seed);

// The shard's indices shuffled for `epoch`.
std::vector<int64_t> epochOrder(int64_t n, int shard, int num_shards, uint64_t seed, int epoch);

// A 64-bit mix of the inputs (splitmix64), for deriving per-epoch and per-batch seeds.
uint64_t mixSeed(uint64_t a, uint64_t b);

}  // namespace sparseps

#include "experiments/datasets/shard.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace sparseps {

uint64_t mixSeed(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9e3779b97f4a7c15ull * (b + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<int64_t> shardIndices(int64_t n, int shard, int num_shards, uint64_t seed) {
  if (n <= 0 || num_shards < 1 || shard < 0 || shard >= num_shards) return {};
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  std::mt19937_64 rng(mixSeed(seed, 0x5a4dull));
  std::shuffle(perm.begin(), perm.end(), rng);
  const int64_t begin = n * shard / num_shards;
  const int64_t end = n * (shard + 1) / num_shards;
  return std::vector<int64_t>(perm.begin() + begin, perm.begin() + end);
}

std::vector<int64_t> epochOrder(int64_t n, int shard, int num_shards, uint64_t seed, int epoch) {
  std::vector<int64_t> order = shardIndices(n, shard, num_shards, seed);
  std::mt19937_64 rng(mixSeed(seed + static_cast<uint64_t>(epoch), static_cast<uint64_t>(shard)));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace sparseps

#include "core/runtime/shard_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace sparseps {
namespace {

SegmentSpecs contiguous(const std::vector<size_t>& sizes) {
  SegmentSpecs specs;
  size_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    specs.push_back({static_cast<uint32_t>(i), offset, sizes[i], sizes[i] > 1});
    offset += sizes[i];
  }
  return specs;
}

// Every segment belongs to exactly one shard, in order, with local ids and offsets.
void expectPartition(const SegmentSpecs& specs, const ShardPlan& plan) {
  uint32_t next = 0;
  for (int s = 0; s < plan.numShards(); ++s) {
    const Shard& shard = plan.shard(s);
    ASSERT_GT(shard.num_segments, 0u);
    EXPECT_EQ(shard.first_segment, next);
    for (uint32_t i = 0; i < shard.num_segments; ++i, ++next) {
      EXPECT_EQ(plan.shardOf(next), s);
      EXPECT_EQ(plan.localId(next), i);
      EXPECT_EQ(shard.local_specs[i].id, i);
      EXPECT_EQ(shard.offset + shard.local_specs[i].offset, specs[next].offset);
      EXPECT_EQ(shard.local_specs[i].numel, specs[next].numel);
    }
  }
  EXPECT_EQ(next, specs.size());
}

TEST(ShardPlanTest, OneShardHoldsEverything) {
  auto specs = contiguous({10, 1, 30});
  auto plan = ShardPlan::make(specs, 1);
  ASSERT_TRUE(plan.ok());
  expectPartition(specs, *plan);
  EXPECT_EQ(plan->shard(0).numel, 41u);
}

TEST(ShardPlanTest, TwoShardsBalanceElements) {
  auto specs = contiguous({100, 2, 100, 2, 100, 2, 100, 2});
  auto plan = ShardPlan::make(specs, 2);
  ASSERT_TRUE(plan.ok());
  expectPartition(specs, *plan);
  EXPECT_EQ(plan->shard(0).numel, 204u);
  EXPECT_EQ(plan->shard(1).numel, 204u);
}

TEST(ShardPlanTest, RandomLayoutsArePartitioned) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<size_t> sizes(1 + rng() % 30);
    for (auto& n : sizes) n = 1 + rng() % 1000;
    int shards = 1 + static_cast<int>(rng() % sizes.size());
    auto specs = contiguous(sizes);
    auto plan = ShardPlan::make(specs, shards);
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->numShards(), shards);
    expectPartition(specs, *plan);
  }
}

TEST(ShardPlanTest, MoreShardsThanSegmentsIsAnError) {
  auto plan = ShardPlan::make(contiguous({5, 5}), 3);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("servers"), std::string::npos);
}

}  // namespace
}  // namespace sparseps

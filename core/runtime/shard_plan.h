#pragma once
// ShardPlan: how the flat parameter vector is split across S server shards. Each shard
// serves a contiguous run of whole segments (key ranges aligned to segment boundaries,
// balanced by element count), so per-segment top-k means the same with any S. Workers
// map global segment ids to (shard, local id) when they split a push, and back when
// they merge the replies; each shard's method rule sees only its own segments, with ids
// and offsets relative to the shard.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "compressors/segment_spec.h"
#include "optim/method.h"

namespace sparseps {

struct Shard {
  uint32_t first_segment = 0;  // global id of its first segment
  uint32_t num_segments = 0;
  size_t offset = 0;           // first element in the global flat buffer
  size_t numel = 0;
  SegmentSpecs local_specs;    // ids 0..num_segments-1, offsets from `offset`
};

class ShardPlan {
 public:
  // Fails when there are more shards than segments.
  static absl::StatusOr<ShardPlan> make(const SegmentSpecs& specs, int num_shards);

  int numShards() const { return static_cast<int>(shards_.size()); }
  const Shard& shard(int s) const { return shards_[s]; }
  int shardOf(uint32_t global_id) const { return shard_of_[global_id]; }
  uint32_t localId(uint32_t global_id) const {
    return global_id - shards_[shard_of_[global_id]].first_segment;
  }

 private:
  std::vector<Shard> shards_;
  std::vector<int> shard_of_;
};

// Moves the segments of *push (global ids) into (*to_shard)[s] with shard-local ids. Each
// segment's buffers are swapped over, not copied; mergeBack swaps them back into *push
// (global ids again), so a push refilled in place each step keeps its memory.
void splitByShard(const ShardPlan& plan, Message* push, std::vector<Message>* to_shard);
void mergeBack(const ShardPlan& plan, std::vector<Message>* to_shard, Message* push);

// A shard's message (local ids) with global ids, ready for the worker rule.
void toGlobalIds(const ShardPlan& plan, int shard, Message* message);

}  // namespace sparseps

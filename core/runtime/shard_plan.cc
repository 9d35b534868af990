#include "core/runtime/shard_plan.h"

#include "absl/strings/str_cat.h"

namespace sparseps {

absl::StatusOr<ShardPlan> ShardPlan::make(const SegmentSpecs& specs, int num_shards) {
  if (num_shards < 1) return absl::InvalidArgumentError("servers: must be at least 1");
  if (static_cast<size_t>(num_shards) > specs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("servers: ", num_shards,
                                                   " shards but the model has only ",
                                                   specs.size(), " parameter segments"));
  }
  size_t total = 0;
  for (const auto& s : specs) total += s.numel;

  ShardPlan plan;
  plan.shards_.resize(num_shards);
  plan.shard_of_.resize(specs.size());
  size_t seg = 0;
  size_t assigned = 0;
  for (int s = 0; s < num_shards; ++s) {
    Shard& shard = plan.shards_[s];
    shard.first_segment = static_cast<uint32_t>(seg);
    shard.offset = specs[seg].offset;
    // Close the shard once it reaches its share of the elements, but leave at least
    // one segment for each shard still to come.
    const size_t target = total * static_cast<size_t>(s + 1) / num_shards;
    const size_t must_leave = static_cast<size_t>(num_shards - s - 1);
    do {
      SegmentSpec local = specs[seg];
      local.id = shard.num_segments;
      local.offset = specs[seg].offset - shard.offset;
      shard.local_specs.push_back(local);
      shard.numel += specs[seg].numel;
      assigned += specs[seg].numel;
      plan.shard_of_[seg] = s;
      ++shard.num_segments;
      ++seg;
    } while (seg < specs.size() - must_leave && (assigned < target || s == num_shards - 1));
  }
  return plan;
}

void splitByShard(const ShardPlan& plan, Message* push, std::vector<Message>* to_shard) {
  to_shard->resize(plan.numShards());
  for (Message& m : *to_shard) m.clear();
  for (SegmentData& seg : *push) {
    Message& dst = (*to_shard)[plan.shardOf(seg.segment_id)];
    dst.emplace_back();
    std::swap(dst.back(), seg);
    seg.segment_id = dst.back().segment_id;  // *push keeps its ids for mergeBack
    dst.back().segment_id = plan.localId(seg.segment_id);
  }
}

void mergeBack(const ShardPlan& plan, std::vector<Message>* to_shard, Message* push) {
  std::vector<size_t> next(plan.numShards(), 0);
  for (SegmentData& seg : *push) {
    const int shard = plan.shardOf(seg.segment_id);
    SegmentData& moved = (*to_shard)[shard][next[shard]++];
    moved.segment_id = seg.segment_id;
    std::swap(moved, seg);
  }
}

void toGlobalIds(const ShardPlan& plan, int shard, Message* message) {
  for (SegmentData& seg : *message) seg.segment_id += plan.shard(shard).first_segment;
}

}  // namespace sparseps

#pragma once
// Snapshot: the servers' model at one moment of a run, for evaluation off the training
// path: taken at every few global epochs of pushes and when the last worker leaves
// (ShardCoreOptions::on_snapshot), by real jobs and virtual-time jobs alike.

#include <cstdint>
#include <vector>

namespace sparseps {

struct Snapshot {
  uint64_t index = 0;   // 1, 2, ... per snapshot period; the final one follows
  bool final = false;   // taken when the last worker left
  double epoch = 0;     // global epochs: all workers' pushes / pushes per epoch
  uint64_t version = 0;
  uint64_t pushes = 0;
  double seconds = 0;   // when it was taken, in the run's time (simulated in virtual time)
  std::vector<float> params;   // the whole model, or in a real job shard 0's slice
  std::vector<float> buffers;  // the averaged BN buffers shard 0 serves
};

}  // namespace sparseps

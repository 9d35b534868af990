#pragma once
// What a Python rank holds before its role starts: the model as flat buffers (the Python
// module's tensors become views into them, as FlatModel does for a C++ module) and the
// connection to the other ranks.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "compressors/segment_spec.h"
#include "core/connect.h"
#include "core/flat_model.h"
#include "python/src/job_config.h"

namespace sparseps::python {

struct RankModel {
  FlatModel flat;
  SegmentSpecs specs;
  // Parameters and float buffers both: a worker built without the module's BN buffers
  // (sparseps.Optimizer without model=) is told at connect time, not at the first sync.
  uint64_t fingerprint = 0;
};

absl::StatusOr<RankModel> flattenModel(const FlatModel::NamedTensors& params,
                                       const FlatModel::NamedTensors& buffers);

// The connection and, when rank 0 hosts a TCP store, that store (it must outlive the
// rendezvous of every other rank, so it lives as long as the connection).
struct Connection {
  Connection();
  Connection(Connection&&) noexcept;
  Connection& operator=(Connection&&) noexcept;
  ~Connection();
  std::unique_ptr<gloo::rendezvous::Store> store;
  std::unique_ptr<RankConnection> rank;
};

// Blocks until the whole world has met and shaken hands; call without the GIL.
absl::StatusOr<Connection> connect(const JobConfig& config, const RankModel& model);

}  // namespace sparseps::python

#pragma once
// What every rank does before its role starts: threads, the data set, the model (its flat
// buffers, segment specs and layout fingerprint) and the connection to the other ranks
// (FileStore on one machine, rank 0's TCP store across machines, link shaping, handshake).

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "c10/core/Device.h"
#include "compressors/segment_spec.h"
#include "core/net/connect.h"
#include "core/torch/ps_rank.h"
#include "core/torch/flat_model.h"
#include "experiments/datasets/dataset.h"
#include "experiments/driver/driver_config.h"
#include "experiments/models/image_classifier.h"

namespace sparseps {

// Sets LibTorch's intra-op threads (threadsFor) and one inter-op thread. Call first.
void setTorchThreads(const DriverConfig& config);

absl::StatusOr<std::unique_ptr<Dataset>> loadDataset(const DriverConfig& config);

// A rank's model (flat buffers and segments) and the module they are the tensors of.
struct ClassifierModel : RankModel {
  ClassifierModel(std::shared_ptr<ImageClassifier> module, FlatModel flat)
      : RankModel(std::move(flat)), net(std::move(module)) {}
  std::shared_ptr<ImageClassifier> net;
};

// A fresh model for `dataset` from LibTorch's global generator (seed it first), its flat
// buffers on `device` (a GPU worker's: rankDevice in device.h).
absl::StatusOr<ClassifierModel> buildModel(const DriverConfig& config, const Dataset& dataset,
                                     c10::Device device = c10::Device(c10::DeviceType::CPU));

// All workers' batches of one epoch together (the server's pushes per epoch).
int64_t pushesPerEpoch(const DriverConfig& config, const Dataset& dataset);

// Through the FileStore in --store-dir on one machine, rank 0's TCP store across machines.
absl::StatusOr<StoredConnection> connectDriverRank(const DriverConfig& config,
                                                const RankModel& model);

// "[rank 2 12.3s] text" on stderr (the rank's log).
void logLine(int rank, const std::string& text);

}  // namespace sparseps

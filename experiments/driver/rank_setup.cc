#include "experiments/driver/rank_setup.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "experiments/datasets/make_dataset.h"
#include "experiments/models/model_factory.h"

namespace sparseps {

void setTorchThreads(const DriverConfig& config) {
  at::set_num_interop_threads(1);
  at::set_num_threads(threadsFor(config));
}

absl::StatusOr<std::unique_ptr<Dataset>> loadDataset(const DriverConfig& config) {
  DatasetOptions options;
  // One seed for every rank: the shards are pieces of one seeded permutation.
  options.setSeed(config.job.seed);
  if (config.image_size > 0) options.setImageSize(config.image_size);  // imagenette's crop
  options.setSyntheticClasses(config.synthetic_classes)
      .setSyntheticTrainSize(config.synthetic_size)
      .setSyntheticTestSize(std::max(1, config.synthetic_size / 4));
  options.setNormalization(config.inputNormalization());
  // A model of one input size (the MLP, made for Fashion-MNIST) gets synthetic images of that
  // size in one channel; the others get the default's CIFAR-sized ones, or with --image-size
  // three channels of that side (ImageNet's shape at 224).
  if (const ModelInfo* m = findModel(config.model); m != nullptr && !m->any_size) {
    options.setSyntheticShape({1, m->image_size, m->image_size});
  } else if (config.dataset == "synthetic" && config.image_size > 0) {
    options.setSyntheticShape({3, config.image_size, config.image_size});
  }
  return makeDataset(config.dataset, config.data_dir, options);
}

absl::StatusOr<ClassifierModel> buildModel(const DriverConfig& config, const Dataset& dataset,
                                     c10::Device device) {
  const auto shape = dataset.imageShape();
  if (auto s = checkImageSize(config.model, shape.at(1), shape.at(2)); !s.ok()) return s;
  auto net = makeModel(config.model, dataset.numClasses(), shape.at(0), config.modelInit());
  if (!net.ok()) return net.status();
  (*net)->to(device);  // before flattening: the flat buffers are made where the model is
  auto flat = FlatModel::create(*net, config.compressedTensors());
  if (!flat.ok()) return flat.status();
  return ClassifierModel(*net, std::move(*flat));
}

int64_t pushesPerEpoch(const DriverConfig& config, const Dataset& dataset) {
  int64_t pushes = 0;
  for (int w = 0; w < config.numWorkers(); ++w) {
    pushes += dataset.trainBatches(w, config.numWorkers(), 0, config.batch_size).numBatches();
  }
  return pushes;
}

absl::StatusOr<StoredConnection> connectDriverRank(const DriverConfig& config,
                                                   const RankModel& model) {
  RankOptions rank;
  rank.rank = config.rank;
  rank.world_size = config.world_size;
  rank.num_servers = config.servers;
  rank.run_id = config.run_id;
  rank.iface = config.iface;
  if (config.meetAtMaster()) {
    rank.master_addr = config.master_addr;
    rank.master_port = config.master_port;
  } else {
    rank.store_dir = config.store_dir;
  }
  rank.job = config.job;  // the method and mode for the handshake, the peer timeout
  rank.run_secret = config.run_secret;
  auto options = rank.connectOptions(model.flat);
  if (!options.ok()) return options.status();
  if (config.channelShapes()) {
    // The latency rides on the sender's uplink only, so each message pays it once.
    options->shaping =
        ShapingOptions{{config.bandwidth_bps, config.latency_ns}, {config.bandwidth_bps, 0}};
  }
  return connectThroughStore(std::move(*options));
}

void logLine(int rank, const std::string& text) {
  static const auto start = std::chrono::steady_clock::now();
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "[rank %d %.1fs] %s\n", rank, t, text.c_str());
}

}  // namespace sparseps

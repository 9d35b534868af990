#include "python/src/rank.h"

#include <gloo/rendezvous/store.h>

#include <utility>

#include "transport/tcp_store.h"

namespace sparseps::python {

absl::StatusOr<RankModel> flattenModel(const FlatModel::NamedTensors& params,
                                       const FlatModel::NamedTensors& buffers) {
  if (params.empty()) {
    return absl::InvalidArgumentError("the model has no parameters to train");
  }
  auto flat = FlatModel::create(params, buffers);
  if (!flat.ok()) return flat.status();
  RankModel model{std::move(*flat), {}, 0};
  model.specs = toSegmentSpecs(model.flat.paramLayout());
  // Mixed so that swapping the two layouts changes the result.
  model.fingerprint = model.flat.paramLayout().fingerprint() ^
                      (model.flat.bufferLayout().fingerprint() * 0x9e3779b97f4a7c15ULL);
  return model;
}

Connection::Connection() = default;
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;
Connection::~Connection() {
  if (rank) rank->close();
}

absl::StatusOr<Connection> connect(const JobConfig& config, const RankModel& model) {
  auto options = config.connectOptions(model.fingerprint, model.flat.params().size(),
                                       model.specs.size(), model.flat.buffers().size());
  if (!options.ok()) return options.status();
  Connection connection;
  if (options->rendezvous.store_dir.empty()) {
    auto store = makeTcpStore(options->rendezvous);
    if (!store.ok()) return store.status();
    connection.store = std::move(*store);
    options->store = connection.store.get();
  }
  auto rank = connectRank(std::move(*options));
  if (!rank.ok()) return rank.status();
  connection.rank = std::move(*rank);
  return connection;
}

}  // namespace sparseps::python

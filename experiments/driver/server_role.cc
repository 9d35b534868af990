#include "experiments/driver/server_role.h"

#include <torch/utils.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "experiments/driver/rank_setup.h"
#include "experiments/driver/run_dir.h"
#include "optim/builtin_methods.h"

namespace sparseps {

absl::Status runServerRole(const DriverConfig& config) {
  const auto start = std::chrono::steady_clock::now();
  auto dataset = loadDataset(config);
  if (!dataset.ok()) return dataset.status();
  torch::manual_seed(config.seed);  // the model every worker starts from
  auto model = buildModel(config, **dataset);
  if (!model.ok()) return model.status();
  const int64_t pushes_per_epoch = pushesPerEpoch(config, **dataset);
  logLine(config.rank, absl::StrCat("server shard ", config.rank, ": ", config.model, " with ",
                                    model->flat.params().size(), " parameters, ",
                                    model->flat.buffers().size(), " BN floats; ",
                                    pushes_per_epoch, " pushes per epoch"));

  auto connected = connectDriverRank(config, *model);
  if (!connected.ok()) return connected.status();
  MethodRegistry methods;
  if (auto s = registerBuiltinMethods(methods); !s.ok()) return s;
  JobSpec job = makeJobSpec(config, static_cast<double>(pushes_per_epoch));
  const int rank = config.rank;
  job.server.log = [rank](const std::string& line) { logLine(rank, line); };

  auto stats = runServerShard(*connected->connection->endpoint, job, methods, model->specs,
                              model->flat.params(), model->flat.buffers(), model->fingerprint);
  connected->connection->close();
  if (!stats.ok()) return stats.status();

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json report = {
      {"shard", rank},
      {"bytes_in", stats->bytes_in},
      {"bytes_out", stats->bytes_out},
      {"messages_in", stats->messages_in},
      {"messages_out", stats->messages_out},
      {"dropped_workers", stats->dropped_workers},
      {"wall_seconds", seconds},
  };
  logLine(rank, absl::StrCat("server shard done: ", report.dump()));
  const std::string name = rank == 0 ? "server.json" : absl::StrCat("server", rank, ".json");
  return writeJsonFile(absl::StrCat(config.out, "/", name), report);
}

}  // namespace sparseps

#include "experiments/driver/run_config.h"

#include <vector>

#include "experiments/driver/run_dir.h"

namespace sparseps {

absl::Status writeRunConfig(const DriverConfig& config, const MethodRegistry& methods,
                            const JobSpec& job, const RankModel& model, const Dataset& dataset,
                            int64_t pushes_per_epoch) {
  nlohmann::json resolved = config.toJson();
  auto method = methods.find(config.method);
  if (!method.ok()) return method.status();
  const Downlink downlink = (*method)->downlink(job.method_options);
  const bool sparse_downlink = downlink == Downlink::kSparse;
  resolved["downlink_flag"] = config.downlink;
  resolved["downlink"] = nameOf(kDownlinkNames, downlink);
  if (!sparse_downlink) resolved.erase("server_density");
  if (config.method == "dgc" && config.dgc_warmup) {
    std::vector<double> schedule;
    for (size_t e = 0; e < job.method_options.warmup_densities.size(); ++e) {
      schedule.push_back(job.method_options.densityAt(static_cast<int>(e)));
    }
    resolved["dgc_warmup_densities"] = schedule;
  }
  resolved["git_revision"] = gitRevision();
  resolved["hostname"] = hostName();
  resolved["parameters"] = model.flat.params().size();
  resolved["bn_floats"] = model.flat.buffers().size();
  resolved["pushes_per_epoch"] = pushes_per_epoch;
  resolved["dataset_description"] = dataset.description();
  return writeJsonFile(config.out + "/config.json", resolved);
}

}  // namespace sparseps

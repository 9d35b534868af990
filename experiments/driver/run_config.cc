#include "experiments/driver/run_config.h"

#include <vector>

#include "experiments/driver/run_dir.h"

namespace sparseps {

absl::Status writeRunConfig(const DriverConfig& config, const JobSpec& job,
                            const RankModel& model, const Dataset& dataset,
                            int64_t pushes_per_epoch) {
  nlohmann::json resolved = config.toJson();
  if (resolved.contains("dgc_warmup_densities")) {
    const MethodOptions& o = job.method_options;
    std::vector<double> schedule;  // the densities selected with: never below the target
    for (size_t e = 0; o.dgc.warmup && e < o.dgc.warmup_densities.size(); ++e) {
      schedule.push_back(o.dgc.densityAt(static_cast<int>(e), o.density));
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

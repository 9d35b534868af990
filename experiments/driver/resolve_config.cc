#include "experiments/driver/resolve_config.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "experiments/datasets/make_dataset.h"
#include "experiments/driver/device.h"
#include "experiments/driver/presets.h"
#include "experiments/driver/time_model_flags.h"
#include "experiments/models/model_factory.h"
#include "optim/method_option_table.h"
#include "transport/link_shaping.h"

namespace sparseps {
namespace {

absl::StatusOr<std::vector<double>> parseMilestones(const std::string& text, int epochs) {
  if (text == "none") return std::vector<double>{};
  if (text == "auto") return std::vector<double>{0.6 * epochs, 0.8 * epochs};
  std::vector<double> milestones;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    double epoch = 0;
    if (!absl::SimpleAtod(part, &epoch) || epoch < 0 ||
        (!milestones.empty() && epoch <= milestones.back())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--lr-milestones: '", text, "' is not an increasing comma list of epochs (e.g. "
          "30,40), none or auto"));
    }
    milestones.push_back(epoch);
  }
  return milestones;
}

// A MethodOptions error ("MethodOptions.density: must be ...") named by its flag instead
// ("--density: must be ...").
absl::Status flagError(const absl::Status& status) {
  for (const MethodOptionRow& row : methodOptionRows()) {
    absl::string_view rest = status.message();
    // The whole field: "DgcOptions.warmup" is not "DgcOptions.warmup_densities[1]".
    if (absl::ConsumePrefix(&rest, row.field) && !rest.empty() &&
        (rest[0] == ':' || rest[0] == '[')) {
      return absl::InvalidArgumentError(absl::StrCat(row.flag(), rest));
    }
  }
  return status;
}

// The model's defaults (ModelInfo) for the flags not given: the rate rule and the crop.
absl::Status applyModelDefaults(DriverConfig* c, const std::set<std::string>& given) {
  const ModelInfo* info = findModel(c->model);
  if (info == nullptr) return absl::OkStatus();  // the flag's check reports it
  if (info->lr_per_256 > 0 && c->preset.empty()) {
    if (given.count("--lr") == 0) {  // the examples one server update averages over
      const int update_batch =
          c->job.mode == "sync" ? c->batch_size * c->numWorkers() : c->batch_size;
      c->job.lr = info->lr_per_256 * update_batch / 256.0;
    }
    if (given.count("--warmup-epochs") == 0) c->job.warmup_epochs = std::min(5.0, c->epochs / 5.0);
  }
  if (c->image_size != 0 && c->dataset != "imagenette" && c->dataset != "synthetic") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--image-size applies to imagenette and synthetic; ", c->dataset,
        "'s images have a fixed size: drop --image-size"));
  }
  for (const char* flag : {"--synthetic-classes", "--synthetic-size"}) {
    if (given.count(flag) > 0 && c->dataset != "synthetic") {
      return absl::InvalidArgumentError(absl::StrCat(flag, " applies to --dataset=synthetic; ",
                                                     c->dataset, " has its own examples: drop ",
                                                     flag));
    }
  }
  if (c->image_size == 0 && c->dataset == "imagenette") {
    c->image_size = static_cast<int>(info->image_size);
  }
  if (absl::Status s = checkInit(c->model, c->modelInit()); !s.ok()) return s;
  if (absl::Status s = checkNormalization(c->dataset, c->inputNormalization()); !s.ok()) {
    return s;
  }
  if (c->image_size != 0 && c->image_size < 32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--image-size must be at least 32 (the ResNets downsample by 32), got ", c->image_size));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status resolveDriverConfig(DriverConfig* c, const std::set<std::string>& given) {
  applyPreset(c, given);
  const bool bandwidth_given = given.count("--bandwidth") > 0;
  if (c->world_size <= c->servers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--world-size (", c->world_size, ") must exceed --servers (", c->servers,
        "): the ranks after the server shards are the workers"));
  }
  if (auto s = applyModelDefaults(c, given); !s.ok()) return s;
  if (c->eval_samples < 0) c->eval_samples = c->max_steps > 0 ? 1000 : 0;
  if (auto s = resolveTimeModel(c); !s.ok()) return s;
  const bool netns = c->net == "netns";
  if (c->virtualClock()) {
    if (netns) {
      return absl::InvalidArgumentError(
          "--net=netns runs every rank as a process on a host of its own; --clock=virtual "
          "runs none: drop one of them");
    }
    if (c->multiMachine() || c->rank >= 0) {
      return absl::InvalidArgumentError(
          "--clock=virtual runs the whole job in this one process: drop --rank and "
          "--master-addr");
    }
    if (c->resume) {
      return absl::InvalidArgumentError("--resume: a virtual-time job cannot resume; run it again");
    }
    c->rank = 0;
    c->store_dir = "unused";  // no rendezvous
  }
  // One process that connects to no one.
  const bool checking = c->dry_run || c->preflight || c->print_config || c->print_model;
  if (checking && c->rank < 0) c->rank = c->servers;  // a worker's view (threads, seed)
  if (c->rank < 0 || c->rank >= c->world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rank (or RANK) must be in [0, ", c->world_size, "), got ", c->rank,
        "; to start every rank on this machine use experiments/run"));
  }
  if (c->eval_workers_bn && c->eval_bn_batches == 0) {
    return absl::InvalidArgumentError(
        "--eval-workers-bn: with --eval-bn-batches=0 every score already uses the workers' BN "
        "statistics; drop one of the two");
  }
  if (c->job.mode == "staleness" && c->job.staleness < 1) {
    return absl::InvalidArgumentError("--mode=staleness needs --staleness=N with N >= 1");
  }
  for (const MethodOptionRow& row : methodOptionRows()) {
    if (given.count(row.flag()) > 0 && !row.readBy(c->job.method) && !c->ignore_unread_options) {
      return absl::InvalidArgumentError(absl::StrCat(
          row.flag(), ": --method=", c->job.method, " does not read it (read by ",
          absl::StrJoin(row.readers(), ", "), "); drop it, or give --ignore-unread-options"));
    }
  }
  if (netns && !c->meetAtMaster() && !checking) {
    return absl::InvalidArgumentError(
        "--net=netns: the ranks meet at the server host's address; start the job with "
        "experiments/run --net=netns, which makes the hosts and sets --master-addr and --iface");
  }
  if (c->multiMachine()) {
    if (!bandwidth_given) c->bandwidth = "none";
  } else if (!c->meetAtMaster() && c->store_dir.empty() && !checking) {
    return absl::InvalidArgumentError(
        "--store-dir is required on one machine (or give --master-addr for a multi-machine "
        "job); experiments/run sets it");
  }
  if (c->out.empty() && !checking) {
    return absl::InvalidArgumentError("--out (the run directory) is required; experiments/run "
                                      "sets it");
  }
  c->bandwidth_bps = *parseBandwidth(c->bandwidth);  // checked by the flag's validator
  c->latency_ns = *parseDuration(c->latency);
  c->time.link = LinkSpec{c->bandwidth_bps, c->latency_ns};
  if (c->multiMachine() && (c->bandwidth_bps > 0 || c->latency_ns > 0)) {
    return absl::InvalidArgumentError(
        "--bandwidth/--latency simulate links between the processes of one machine (their "
        "clocks must agree); across machines the real network is the link: use "
        "--bandwidth=none --latency=0");
  }
  if (auto milestones = parseMilestones(c->lr_milestones, c->epochs); milestones.ok()) {
    c->job.lr_milestones = *std::move(milestones);
  } else {
    return milestones.status();
  }
  if (c->data_dir.empty()) c->data_dir = defaultDataDir(c->dataset);
  if (auto job = makeJobSpec(*c, 1); !job.ok()) return flagError(job.status());
  return checkDevice(*c);
}

}  // namespace sparseps

#include "experiments/driver/driver_config.h"

#include <algorithm>
#include <thread>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compressors/registry.h"
#include "experiments/datasets/make_dataset.h"
#include "experiments/driver/device.h"
#include "experiments/driver/presets.h"
#include "experiments/driver/time_model_flags.h"
#include "experiments/models/model_factory.h"
#include "optim/builtin_methods.h"
#include "optim/method_option_table.h"
#include "optim/selection.h"
#include "transport/link_shaping.h"

namespace sparseps {
namespace {

// A spelling the flag's check (an IsMember of namesOf(table)) already let through.
template <typename E, size_t N>
E checkedName(const NameTable<E, N>& table, const std::string& name) {
  return parseName(table, "", name).value();
}

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

}  // namespace

namespace {

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
  if (c->image_size != 0 && c->dataset != "imagenette") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--image-size applies to imagenette; ", c->dataset, "'s images have a fixed size: "
        "drop --image-size"));
  }
  if (given.count("--synthetic-classes") > 0 && c->dataset != "synthetic") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--synthetic-classes applies to --dataset=synthetic; ", c->dataset, " has its own "
        "classes: drop --synthetic-classes"));
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

CompressedTensors DriverConfig::compressedTensors() const {
  return checkedName(kCompressedTensorsNames, compressed_tensors);
}

ModelInit DriverConfig::modelInit() const { return checkedName(kModelInitNames, init); }

Normalization DriverConfig::inputNormalization() const {
  return checkedName(kNormalizationNames, normalization);
}

std::string DriverConfig::network() const {
  if (virtualClock()) return "virtual";
  if (net == "netns") return "netns";
  return multiMachine() ? "machines" : "loopback";
}

int64_t DriverConfig::evalExamples(int64_t test_size) const {
  return eval_samples > 0 ? std::min(eval_samples, test_size) : test_size;
}

int64_t DriverConfig::evalBnBatches(int64_t examples) const {
  if (eval_bn_batches >= 0) return eval_bn_batches;
  return std::min<int64_t>(100, (examples + batch_size - 1) / batch_size);
}

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
  if (c->job.mode == "staleness" && c->job.staleness < 1) {
    return absl::InvalidArgumentError("--mode=staleness needs --staleness=N with N >= 1");
  }
  for (const MethodOptionRow& row : methodOptionRows()) {
    if (given.count(row.flag()) > 0 && !row.readBy(c->job.method) && !c->ignore_unread_options) {
      return absl::InvalidArgumentError(absl::StrCat(
          row.flag(), ": --method=", c->job.method, " does not read it (read by ",
          absl::StrJoin(row.readers, ", "), "); drop it, or give --ignore-unread-options"));
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

absl::StatusOr<JobSpec> makeJobSpec(const DriverConfig& c, double pushes_per_epoch) {
  JobOptions options = c.job;
  options.pushes_per_epoch = pushes_per_epoch;
  auto job = options.jobSpec(c.servers, c.numWorkers());
  if (!job.ok()) return job.status();
  if (!c.out.empty()) job->checkpoint_path = c.checkpointPath();
  job->checkpoint_every = c.checkpoint_every;
  job->resume = c.resume;
  if (auto s = job->validate(); !s.ok()) return s;
  return job;
}

int machineCores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

int computeSlotsFor(const DriverConfig& c) {
  if (c.compute_slots >= 0) return c.compute_slots;
  if (c.virtualClock() || c.multiMachine()) return 0;
  const int cores = machineCores();
  return c.numWorkers() > cores ? cores : 0;
}

int threadsFor(const DriverConfig& c) {
  if (c.threads > 0) return c.threads;
  if (c.virtualClock()) return 1;  // one process computes every worker's steps in turn
  const int local_workers = c.multiMachine() ? 1 : c.numWorkers();
  return std::max(1, machineCores() / local_workers);
}

// What the worker compresses with: gd's compressor or selection, the selection of dgs and
// dgc, nothing for the dense methods.
std::string effectiveCompressor(const DriverConfig& c) {
  const MethodOptions& o = c.job.method_options;
  if (c.job.method == "gd" && !o.gd.compressor.empty()) return o.gd.compressor;
  if (findMethodOption("selection")->readBy(c.job.method)) return selectorName(o.selection);
  return "none";
}

nlohmann::json DriverConfig::toJson() const {
  nlohmann::json resolved = {
      {"clock", clock},
      {"preset", preset},
      {"world_size", world_size},
      {"servers", servers},
      {"workers", numWorkers()},
      {"model", model},
      {"dataset", dataset},
      {"data_dir", data_dir},
      {"image_size", image_size},
      {"compressed_tensors", compressed_tensors},
      {"init", init},
      {"normalization", normalization},
      {"epochs", epochs},
      {"batch_size", batch_size},
      {"bandwidth", bandwidth},
      {"bandwidth_bps", bandwidth_bps},
      {"latency", latency},
      {"latency_ns", latency_ns},
      {"device", device},
      {"threads", threadsFor(*this)},
      {"compute_slots", computeSlotsFor(*this)},
      {"out", out},
      {"resume", resume},
      {"eval_every", eval_every},
      {"eval_samples", eval_samples},
      {"eval_bn_batches", eval_bn_batches},
      {"max_steps", max_steps},
      {"stop_on_divergence", stop_on_divergence},
      {"checkpoint_every", checkpoint_every},
      {"run_secret", run_secret.empty() ? "none" : "set"},
      {"master_addr", master_addr},
      {"master_port", master_port},
      {"iface", iface},
      {"net", net},
      {"run_id", run_id},
  };
  if (dataset == "synthetic") resolved["synthetic_classes"] = synthetic_classes;
  for (const JobOptionRow& row : jobOptionRows()) {  // pushes_per_epoch: run_config.cc's count
    resolved[row.name] =
        std::visit([this](const auto& f) { return nlohmann::json(job.*(f.member)); }, row.ref);
  }
  for (const MethodOptionRow& row : methodOptionRows()) {
    if (!row.readBy(job.method)) continue;  // what the method ran with, nothing it ignored
    resolved[row.name] = std::visit(
        [this](const auto& f) { return nlohmann::json(f.get(job.method_options)); }, row.ref);
  }
  // The reply the server really sends (auto: the method's own), and the dual-way reply's
  // options only where it is sent.
  MethodRegistry methods;
  if (auto found = registerBuiltinMethods(methods).ok() ? methods.find(job.method)
                                                        : absl::StatusOr<const Method*>();
      found.ok()) {
    const Downlink downlink = (*found)->downlink(job.method_options);
    resolved["downlink"] = nameOf(kDownlinkNames, downlink);
    if (downlink != Downlink::kSparse) {
      resolved.erase("server_density");
      resolved.erase("resync_every");
    }
  }
  resolved["compressor"] = effectiveCompressor(*this);  // "none" for the dense methods
  if (virtualClock()) {
    const bool fixed = time.step == TimeModel::Step::kFixed;
    resolved["time_model"] = {
        {"step_time", step_time},
        {"step", fixed ? "fixed" : "measured"},
        {"step_seconds", fixed ? time.step_seconds : 0.0},
        {"step_jitter_cv", time.jitter_cv},
        {"stragglers", time.stragglers},
        {"straggler_slowdown", time.straggler_factor},
        {"codec", time.codec_measured ? "measured" : "fixed"},
        {"codec_seconds_per_push", time.codec_measured ? 0.0 : time.codec_seconds},
        {"codec_scale", time.codec_scale},
        {"link_bits_per_second", time.link.bits_per_second},
        {"link_latency_ns", time.link.latency_ns},
        {"links", "every worker's NIC its own; each server shard's NIC shared by all uploads "
                  "(downlink) and all replies (uplink); FIFO per link; latency on the uplink"},
        {"server_service", "each shard serves one message at a time, in arrival order"},
        {"seed", time.seed},
    };
  }
  return resolved;
}

}  // namespace sparseps

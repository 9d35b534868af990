#include "experiments/driver/driver_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>
#include <variant>

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "compressors/registry.h"
#include "experiments/datasets/make_dataset.h"
#include "experiments/driver/device.h"
#include "experiments/driver/divergence.h"
#include "experiments/driver/presets.h"
#include "experiments/models/model_factory.h"
#include "optim/builtin_methods.h"
#include "optim/method_option_table.h"
#include "optim/selection.h"
#include "transport/link_shaping.h"

namespace sparseps {
namespace {

// A spelling the flag's check (CLI::IsMember(namesOf(table))) already let through.
template <typename E, size_t N>
E checkedName(const NameTable<E, N>& table, const std::string& name) {
  return parseName(table, "", name).value();
}

// CLI11's PositiveNumber and NonNegativeNumber name their upper bound, DBL_MAX, in all of
// its 309 digits; these state the rule instead.
CLI::Validator numberAtLeast(double bound, bool inclusive) {
  const std::string rule = inclusive ? absl::StrCat("must be ", bound, " or more")
                                     : absl::StrCat("must be more than ", bound);
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        double v = 0;
        if (!absl::SimpleAtod(input, &v) || !std::isfinite(v)) {
          return absl::StrCat("expected a finite number, got '", input, "'");
        }
        const bool ok = inclusive ? v >= bound : v > bound;
        return ok ? std::string() : absl::StrCat(rule, ", got ", input);
      },
      inclusive ? "NONNEGATIVE" : "POSITIVE");
}
const CLI::Validator kNonNegative = numberAtLeast(0, true);
const CLI::Validator kPositive = numberAtLeast(0, false);
const CLI::Validator kAutoOrNonNegative = numberAtLeast(-1, true);  // -1 = auto

std::vector<std::string> modelNames() {
  std::vector<std::string> names;
  for (const ModelInfo& m : knownModels()) names.push_back(m.name);
  return names;
}

std::string modelHelp() {
  std::string help = "network to train:";
  for (const ModelInfo& m : knownModels()) {
    absl::StrAppend(&help, "\n  ", m.name, " (", m.image_size, " px): ", m.description);
  }
  return help;
}

// A CLI11 check that the text parses with parseBandwidth / parseDuration.
CLI::Validator bandwidthCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        auto bps = parseBandwidth(text);
        return bps.ok() ? "" : std::string(bps.status().message()) +
                                   " (examples: 100mbit, 1gbit, 10gbit, none)";
      },
      "BANDWIDTH", "bandwidth");
}

CLI::Validator durationCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        auto ns = parseDuration(text);
        return ns.ok() ? "" : std::string(ns.status().message()) +
                                  " (examples: 0, 50us, 1ms)";
      },
      "DURATION", "duration");
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

// --step-time=profile:FILE: the seconds per step of `model` at `batch` from a JSON file
// {"model": {"batch": seconds, ...}, ...}.
absl::StatusOr<double> profileStepSeconds(const std::string& path, const std::string& model,
                                          int batch) {
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("--step-time=profile:", path, ": cannot read ", path));
  }
  const nlohmann::json profile = nlohmann::json::parse(file, nullptr, false);
  if (profile.is_discarded() || !profile.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--step-time=profile:", path, ": not a JSON object {\"model\": {\"batch\": seconds}}"));
  }
  if (!profile.contains(model) || !profile[model].is_object()) {
    std::vector<std::string> models;
    for (const auto& item : profile.items()) models.push_back(item.key());
    return absl::NotFoundError(absl::StrCat("--step-time=profile:", path, " has no model ", model,
                                            " (it has: ", absl::StrJoin(models, ", "), ")"));
  }
  const nlohmann::json& entry = profile[model];
  const std::string key = std::to_string(batch);
  if (!entry.contains(key) || !entry[key].is_number() || !(entry[key].get<double>() > 0)) {
    std::vector<std::string> batches;
    for (const auto& item : entry.items()) batches.push_back(item.key());
    return absl::NotFoundError(absl::StrCat(
        "--step-time=profile:", path, " has no positive step time for ", model, " at batch ",
        batch, " (batches it has: ", absl::StrJoin(batches, ", "), ")"));
  }
  return entry[key].get<double>();
}

// --step-time, --step-jitter, --stragglers, --codec-time, --codec-scale into config->time;
// they mean something only with --clock=virtual.
absl::Status resolveTimeModel(DriverConfig* c) {
  const bool touched = c->step_time != "measured" || c->step_jitter != 0 ||
                       !c->stragglers.empty() || c->codec_time != "measured" ||
                       c->codec_scale != 1;
  if (!c->virtualClock()) {
    if (touched) {
      return absl::InvalidArgumentError(
          "--step-time, --step-jitter, --stragglers, --codec-time and --codec-scale model "
          "time in a virtual-time job: add --clock=virtual");
    }
    return absl::OkStatus();
  }
  TimeModel& t = c->time;
  if (c->step_time == "measured") {
    t.step = TimeModel::Step::kMeasured;
  } else if (absl::StartsWith(c->step_time, "profile:")) {
    auto seconds = profileStepSeconds(c->step_time.substr(8), c->model, c->batch_size);
    if (!seconds.ok()) return seconds.status();
    t.step = TimeModel::Step::kFixed;
    t.step_seconds = *seconds;
  } else {
    auto ns = parseDuration(c->step_time);
    if (!ns.ok() || *ns <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--step-time: expected measured, a positive duration (e.g. 30ms) or profile:FILE, "
          "got '", c->step_time, "'"));
    }
    t.step = TimeModel::Step::kFixed;
    t.step_seconds = static_cast<double>(*ns) * 1e-9;
  }
  t.jitter_cv = c->step_jitter;
  if (!c->stragglers.empty()) {
    std::vector<std::string> parts = absl::StrSplit(c->stragglers, 'x');
    int count = 0;
    double factor = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &count) ||
        !absl::SimpleAtod(parts[1], &factor) || count < 0 || count > c->numWorkers() ||
        !(factor >= 1) || !std::isfinite(factor)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--stragglers: expected KxS with 0 <= K <= ", c->numWorkers(),
          " workers and a slowdown S >= 1 (e.g. 2x3), got '", c->stragglers, "'"));
    }
    t.stragglers = count;
    t.straggler_factor = factor;
  }
  if (c->codec_time == "measured") {
    t.codec_measured = true;
  } else {
    auto ns = parseDuration(c->codec_time);
    if (!ns.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--codec-time: expected measured or a duration >= 0 (e.g. 2ms, 0), got '",
          c->codec_time, "'"));
    }
    t.codec_measured = false;
    t.codec_seconds = static_cast<double>(*ns) * 1e-9;
  }
  t.codec_scale = c->codec_scale;
  t.seed = c->job.seed;
  return t.validate();
}

// One flag per row of the method option table, bound to its field in `options`; the help
// names the methods that read it. Ranges are checked by MethodOptions::validate when the
// config resolves (flagError names the flag).
void addMethodOptionFlags(CLI::App& app, MethodOptions* options, const std::string& group) {
  for (const MethodOptionRow& row : methodOptionRows()) {
    const std::string flag = row.flag();
    const std::string help =
        row.readers.empty() ? row.help
                            : absl::StrCat("(", absl::StrJoin(row.readers, ", "), ") ", row.help);
    CLI::Option* option = std::visit(
        Overloaded{
            [&](const FieldRef<bool>& f) {  // --f16, --f16=off
              return app.add_flag(flag, f.of(*options), help)
                  ->default_str(f.get(*options) ? "on" : "off");
            },
            [&](const FieldRef<std::vector<double>>& f) {
              return app.add_option(flag, f.of(*options), help)->delimiter(',');
            },
            [&](const ChoiceRef& f) {
              return app
                  .add_option_function<std::string>(
                      flag,
                      [options, &f](const std::string& text) {
                        (void)f.set(*options, text);  // the check let only f.names through
                      },
                      help)
                  ->check(CLI::IsMember(f.names))
                  ->default_str(f.get(*options));
            },
            [&](const auto& f) { return app.add_option(flag, f.of(*options), help); },
        },
        row.ref);
    option->group(group);
  }
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

void addDriverFlags(CLI::App& app, DriverConfig* c, const std::vector<std::string>& methods) {
  app.option_defaults()->always_capture_default();

  auto* job = "Job";
  app.add_option("--preset", c->preset, presetHelp())
      ->check(CLI::IsMember(presetNames()))->group(job);
  app.add_option("--method", c->job.method,
                 "compression method, one of: " + absl::StrJoin(methods, ", "))
      ->check(CLI::IsMember(methods))->group(job);
  app.add_option("--world-size", c->world_size,
                 "ranks in the job: --servers server shards + the workers")
      ->envname("WORLD_SIZE")->check(CLI::Range(2, 4096))->group(job);
  app.add_option("--servers", c->servers, "server shards (ranks 0..servers-1)")
      ->check(CLI::Range(1, 4096))->group(job);
  app.add_option("--mode", c->job.mode,
                 "consistency: async (apply and answer each push alone), sync (average a "
                 "round of every worker's push), staleness (async, a worker waits when more "
                 "than --staleness steps ahead of the slowest)")
      ->check(CLI::IsMember(namesOf(kConsistencyModeNames)))->group(job);
  app.add_option("--staleness", c->job.staleness, "the bound s of --mode=staleness")
      ->check(kNonNegative)->group(job);

  auto* data = "Model and data";
  app.add_option("--model", c->model, modelHelp())->check(CLI::IsMember(modelNames()))
      ->group(data);
  app.add_option("--dataset", c->dataset,
                 "data set, one of: " + absl::StrJoin(knownDatasets(), ", "))
      ->check(CLI::IsMember(knownDatasets()))->group(data);
  app.add_option("--data-dir", c->data_dir,
                 "where the data set is; empty: its default place (fashion-mnist: "
                 "/usr/share/datasets/fashion-mnist; cifar10, imagenette: data/<name>, see "
                 "experiments/fetch-data)")->group(data);
  app.add_option("--image-size", c->image_size,
                 "imagenette: side of the square crop the model sees, e.g. 128 for a much "
                 "faster run (images are cached with their shorter side at this x 256/224); "
                 "0 = the model's own (resnet50: 224)")
      ->check(CLI::Range(0, 1024))->group(data);
  app.add_option("--synthetic-classes", c->synthetic_classes,
                 "synthetic: the number of classes (1000 builds a model with ImageNet's "
                 "classifier, e.g. resnet18's 11.7M parameters)")
      ->check(CLI::Range(2, 1000))->group(data);
  app.add_option("--compressed-tensors", c->compressed_tensors,
                 "which parameter tensors the sparse methods compress: multi-dim (weights of "
                 "dimension > 1; BN weights and biases travel dense) or all (every tensor "
                 "alike, as the DGS reference does)")
      ->check(CLI::IsMember(namesOf(kCompressedTensorsNames)))->group(data);
  app.add_option("--epochs", c->epochs, "passes over the training set")
      ->check(CLI::Range(1, 100000))->group(data);
  app.add_option("--batch-size", c->batch_size, "batch per worker and step")
      ->check(CLI::Range(1, 1 << 20))->group(data);

  auto* opt = "Optimization";
  app.add_option("--lr", c->job.lr,
                 "initial learning rate lr0; default 0.1, or for resnet50 the linear scaling "
                 "rule 0.1 x B / 256, B the examples of one server update: --batch-size (a "
                 "push, async and staleness modes) or --batch-size x workers (sync)")
      ->check(kPositive)->group(opt);
  app.add_option("--lr-milestones", c->lr_milestones,
                 "epochs at which the rate is multiplied by --lr-gamma: a comma list (e.g. "
                 "30,40), none, or auto = 60% and 80% of --epochs (the DGS schedule, 30,40 of 50)")
      ->group(opt);
  app.add_option("--lr-gamma", c->job.lr_gamma, "factor at each milestone")
      ->check(kPositive)->group(opt);
  app.add_option("--warmup-epochs", c->job.warmup_epochs,
                 "linear learning-rate warm-up over the first epochs (may be fractional); "
                 "default 0, or for resnet50 min(5, epochs / 5)")
      ->check(kNonNegative)->group(opt);
  addMethodOptionFlags(app, &c->job.method_options, opt);
  app.add_flag("--ignore-unread-options", c->ignore_unread_options,
               "a method option the method does not read is ignored instead of refused (the "
               "sweep scripts give one set of flags to several methods)")
      ->group(opt);

  auto* net = "Links";
  app.add_option("--bandwidth", c->bandwidth,
                 "simulated NIC bandwidth of every rank (up and down; the server's NIC is "
                 "the shared bottleneck); none = unlimited. One machine only: across machines "
                 "the default is none, the real network")
      ->check(bandwidthCheck())->group(net);
  app.add_option("--latency", c->latency,
                 "simulated one-way latency added to every message (e.g. 50us)")
      ->check(durationCheck())->group(net);

  auto* run = "Run";
  app.add_option("--device", c->device,
                 "where the workers train: cpu, or cuda (the model, its passes and the "
                 "method's worker rule on a GPU; needs a CUDA build of sparseps). Servers "
                 "stay on the CPU")
      ->check(CLI::IsMember({"cpu", "cuda"}))->group(run);
  app.add_option("--threads", c->threads,
                 "LibTorch intra-op threads of this process; 0 = max(1, cores / worker "
                 "ranks on this machine), so the ranks of one job share the cores")
      ->check(kNonNegative)->group(run);
  app.add_option("--compute-slots", c->compute_slots,
                 "workers of this machine that may run a forward/backward pass at once, so "
                 "the cores run whole passes instead of time-slicing them; -1 = auto (the "
                 "cores, when one machine runs more workers than it has cores), 0 = no limit")
      ->check(CLI::Range(-1, 4096))->group(run);
  app.add_option("--seed", c->job.seed,
                 "seed: the model (server), data shards and shuffles; rank r seeds its own "
                 "randomness with seed + r")->group(run);
  app.add_option("--out", c->out,
                 "run directory; experiments/run names it "
                 "runs/<method>-<dataset>-w<workers>-<bandwidth>-<timestamp>")->group(run);
  app.add_flag("--resume", c->resume,
               "continue the run in --out from its server checkpoint")->group(run);
  app.add_option("--eval-every", c->eval_every,
                 "evaluate the servers' model on the test split every this many epochs, "
                 "and always at the end")
      ->check(CLI::Range(1, 100000))->group(run);
  app.add_option("--eval-samples", c->eval_samples,
                 "test examples each evaluation scores: a fixed seeded sample of the test "
                 "split, the same at every evaluation; 0 = all; -1 = auto: all, or 1000 with "
                 "--max-steps (a quick run stays quick)")
      ->check(kAutoOrNonNegative)->group(run);
  app.add_option("--eval-bn-batches", c->eval_bn_batches,
                 "before each evaluation, recompute the BN statistics of the servers' model "
                 "from this many batches of the training set, so that they are its own; 0 = "
                 "use the statistics the workers measured on their models; -1 = auto: as "
                 "many training examples as the evaluation scores, at most 100 batches")
      ->check(kAutoOrNonNegative)->group(run);
  app.add_option("--max-steps", c->max_steps, "stop each worker after this many steps; 0 = off")
      ->check(kNonNegative)->group(run);
  app.add_flag("--stop-on-divergence", c->stop_on_divergence,
               absl::StrFormat("end the run when a worker's loss diverges (not finite, or over "
                               "%g x the mean of its first %d steps; without this flag the run "
                               "goes on and the summary names it); experiments/run then exits "
                               "with status %d",
                               kDivergenceFactor, kReferenceSteps, kDivergedExitCode))
      ->group(run);
  app.add_option("--checkpoint-every", c->checkpoint_every,
                 "server checkpoint every this many server versions (updates); 0 = only at "
                 "the end")->group(run);
  app.add_option("--peer-timeout", c->job.peer_timeout,
                 "seconds a peer may stall before it is dropped: a worker holding a sync or "
                 "staleness round without pushing, a rank sending nothing (not even the "
                 "transport's pulses), or leaving a message untaken while idle; must exceed a "
                 "step's compute time and a payload's transfer time")
      ->check(CLI::PositiveNumber)->group(run);
  app.add_option("--progress", c->progress,
                 "first worker's console progress: auto (updating line on a TTY, plain lines "
                 "otherwise), tty, plain, none")
      ->check(CLI::IsMember({"auto", "tty", "plain", "none"}))->group(run);
  app.add_option("--progress-columns", c->progress_columns,
                 "terminal width: the updating progress line is cut to it (a wrapped line "
                 "cannot be redrawn); 0 = no cut; experiments/run sets it")
      ->check(kNonNegative)->group(run);
  app.add_flag("--dry-run", c->dry_run,
               "check everything a run needs in this one process and write nothing: the "
               "flags (printed resolved), every example of the data (every JPEG decoded), "
               "one training step and one evaluation batch of the model, a push and reply "
               "through the method's rules, and the memory each process will need; no --rank, "
               "--store-dir or --out needed")
      ->group(run);
  app.add_flag("--preflight", c->preflight,
               "check the flags, open the data set and build the model, then exit (what "
               "experiments/run does before it starts the ranks)")
      ->group(run);

  auto* vt = "Virtual time (--clock=virtual)";
  app.add_option("--clock", c->clock,
                 "real: one process per rank over Gloo (experiments/run starts them); virtual: "
                 "the whole job in this process, every worker's real forward/backward and the "
                 "real method and wire, in simulated time (a discrete-event loop orders "
                 "compute, coding, links and server service), to study 16-64 workers on one "
                 "machine")
      ->check(CLI::IsMember({"real", "virtual"}))->group(vt);
  app.add_option("--step-time", c->step_time,
                 "a worker's forward+backward of one batch: measured (its CPU time here, one "
                 "thread: this machine's core is the modelled worker), a duration (e.g. 30ms, "
                 "to model an accelerator), or profile:FILE (a JSON file {\"model\": "
                 "{\"batch size\": seconds}})")
      ->group(vt);
  app.add_option("--step-jitter", c->step_jitter,
                 "step times vary by a lognormal factor of mean 1 and this coefficient of "
                 "variation (seeded); 0 = none")
      ->check(kNonNegative)->group(vt);
  app.add_option("--stragglers", c->stragglers,
                 "KxS: the first K workers compute S times slower (e.g. 2x3)")->group(vt);
  app.add_option("--codec-time", c->codec_time,
                 "method rules and wire coding per message side (worker: push and reply; "
                 "server: each push's decode, update, reply): measured (CPU time here, times "
                 "--codec-scale) or a fixed duration per push (0: free)")
      ->group(vt);
  app.add_option("--codec-scale", c->codec_scale,
                 "multiplies measured codec times (a faster or slower machine than this one)")
      ->check(kNonNegative)->group(vt);

  auto* rv = "Rendezvous (one rank of a job)";
  app.add_option("--rank", c->rank, "this process's rank: 0..servers-1 serve, the rest work")
      ->envname("RANK")->group(rv);
  app.add_option("--master-addr", c->master_addr,
                 "multi-machine: host of rank 0, which serves the TCP store; empty: one "
                 "machine, FileStore in --store-dir")
      ->envname("MASTER_ADDR")->group(rv);
  app.add_option("--master-port", c->master_port, "multi-machine: TCP store port")
      ->envname("MASTER_PORT")->check(CLI::Range(1, 65535))->group(rv);
  app.add_option("--iface", c->iface,
                 "network interface to bind (e.g. eth0); empty: 127.0.0.1 on one machine")
      ->group(rv);
  app.add_option("--store-dir", c->store_dir, "one machine: FileStore directory")->group(rv);
  app.add_option("--run-id", c->run_id,
                 "key prefix of this run in the store (every rank the same)")->group(rv);
  app.add_option("--run-secret", c->run_secret,
                 "a secret every rank of the job presents in the handshake; a rank without it "
                 "is refused. Set SPARSEPS_RUN_SECRET rather than the flag (a flag shows in "
                 "ps); experiments/run sets one for the ranks it starts")
      ->envname("SPARSEPS_RUN_SECRET")->group(rv);
}

std::set<std::string> givenFlags(const CLI::App& app) {
  std::set<std::string> given;
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() > 0) given.insert(option->get_name());
  }
  return given;
}

namespace {

// The model's defaults (ModelInfo) for the flags not given: the rate rule and the crop.
absl::Status applyModelDefaults(DriverConfig* c, const std::set<std::string>& given) {
  const auto info = std::find_if(knownModels().begin(), knownModels().end(),
                                 [c](const ModelInfo& m) { return m.name == c->model; });
  if (info == knownModels().end()) return absl::OkStatus();  // the flag's check reports it
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
  if (c->virtualClock()) {
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
  const bool checking = c->dry_run || c->preflight;  // one process that connects to no one
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
  if (c->multiMachine()) {
    if (!bandwidth_given) c->bandwidth = "none";
  } else if (c->store_dir.empty() && !checking) {
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

#include "experiments/driver/driver_config.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/datasets/make_dataset.h"
#include "experiments/driver/divergence.h"
#include "experiments/driver/presets.h"
#include "experiments/models/model_factory.h"
#include "optim/method_option_table.h"
#include "transport/link_shaping.h"

namespace sparseps {
namespace {

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

// A CLI11 check that the text parses with `parse` (parseBandwidth, parseDuration); its
// error ends with examples of good values.
template <typename Parse>
CLI::Validator parsesWith(Parse parse, const std::string& type, const std::string& examples) {
  return CLI::Validator(
      [parse, examples](std::string& text) -> std::string {
        auto parsed = parse(text);
        return parsed.ok() ? ""
                           : absl::StrCat(parsed.status().message(), " (examples: ", examples, ")");
      },
      type, type);
}

// The help of the job option row `name` (core/runtime/job_options.h).
const std::string& jobOptionHelp(const std::string& name) {
  for (const JobOptionRow& row : jobOptionRows()) {
    if (row.name == name) return row.help;
  }
  std::abort();  // a name this file spells wrong
}

// One flag per row of the method option table, bound to its field in `options`; the help
// names the methods that read it. Ranges are checked by MethodOptions::validate when the
// config resolves (flagError names the flag).
void addMethodOptionFlags(CLI::App& app, MethodOptions* options, const std::string& group) {
  for (const MethodOptionRow& row : methodOptionRows()) {
    const std::string flag = row.flag();
    const std::string help =
        row.every_method ? row.help
                         : absl::StrCat("(", absl::StrJoin(row.readers(), ", "), ") ", row.help);
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
  app.add_option("--server-threads", c->job.server_threads,
                 "cores each server shard serves one push with (its segments updated and its "
                 "reply made on that many threads; the model and replies are the same as with "
                 "one)")
      ->check(CLI::Range(1, kMaxServerThreads))->group(job);
  app.add_option("--mode", c->job.mode,
                 "consistency: async (apply and answer each push alone), sync (average a "
                 "round of every worker's push), staleness (async, a worker waits when more "
                 "than --staleness steps ahead of the slowest)")
      ->check(CLI::IsMember(namesOf(kConsistencyModeNames)))->group(job);
  app.add_option("--staleness", c->job.staleness, "the bound s of --mode=staleness")
      ->check(kNonNegative)->group(job);
  app.add_option("--push-guard", c->job.push_guard, jobOptionHelp("push_guard"))
      ->check(CLI::IsMember(namesOf(kPushGuardNames)))->group(job);

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
                 "0 = the model's own (resnet50: 224). synthetic: the images' side, in three "
                 "channels (224 with --synthetic-classes=1000: ImageNet's shape); 0 = 32")
      ->check(CLI::Range(0, 1024))->group(data);
  app.add_option("--synthetic-classes", c->synthetic_classes,
                 "synthetic: the number of classes (1000 builds a model with ImageNet's "
                 "classifier, e.g. resnet18's 11.7M parameters)")
      ->check(CLI::Range(2, 1000))->group(data);
  app.add_option("--synthetic-size", c->synthetic_size,
                 "synthetic: the training examples (the test split has a quarter as many, at "
                 "least 1); fewer make a large --image-size quick to generate")
      ->check(CLI::Range(1, 1 << 24))->group(data);
  app.add_option("--compressed-tensors", c->compressed_tensors,
                 "which parameter tensors the sparse methods compress: multi-dim (weights of "
                 "dimension > 1; BN weights and biases travel dense) or all (every tensor "
                 "alike, as the DGS reference does)")
      ->check(CLI::IsMember(namesOf(kCompressedTensorsNames)))->group(data);
  app.add_option("--init", c->init,
                 "how the model's weights start: model (its own: the ResNets' "
                 "kaiming-fan-out, the MLP's torch-default), torch-default (every layer's "
                 "LibTorch default, as a torch.nn model with no init code), torch-0.4 (that "
                 "with BN weights U(0, 1), as PyTorch 0.4 and the DGS reference's runs had "
                 "it), or kaiming-fan-out (torchvision's, for convolutions)")
      ->check(CLI::IsMember(namesOf(kModelInitNames)))->group(data);
  app.add_option("--normalization", c->normalization,
                 "input std per channel: dataset-std (over all pixels) or, for cifar10, "
                 "per-image-std (the mean of the images' own, 0.2023/0.1994/0.2010, as the "
                 "DGS reference and kuangliu/pytorch-cifar normalize)")
      ->check(CLI::IsMember(namesOf(kNormalizationNames)))->group(data);
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
  app.add_option("--start-lr", c->job.start_lr, jobOptionHelp("start_lr"))
      ->check(kNonNegative)->group(opt);
  app.add_option("--start-gap", c->job.start_gap, jobOptionHelp("start_gap"))
      ->check(CLI::Range(0.0, 86400.0))->group(job);
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
      ->check(parsesWith(parseBandwidth, "BANDWIDTH", "100mbit, 1gbit, 10gbit, none"))
      ->group(net);
  app.add_option("--latency", c->latency,
                 "simulated one-way latency added to every message (e.g. 50us)")
      ->check(parsesWith(parseDuration, "DURATION", "0, 50us, 1ms"))->group(net);

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
  app.add_flag("--eval-workers-bn", c->eval_workers_bn,
               "score each snapshot twice: first with the BN statistics the workers pushed "
               "(workers_bn_accuracy, workers_bn_loss in eval.jsonl), then with statistics "
               "recomputed as --eval-bn-batches says (accuracy, loss), so that the two "
               "compare on the same weights")
      ->group(run);
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
  app.add_flag("--print-config", c->print_config,
               "print the configuration these flags resolve to (defaults, preset, "
               "environment) as JSON, with \"rank\" null when none was given, and exit "
               "(experiments/run reads the job from it)")
      ->group(run);
  app.add_flag("--print-model", c->print_model,
               "print the initial model these flags build (seeded with --seed, as the "
               "server's) as JSON: each parameter's name, shape, and the mean and std of its "
               "values, and the per-channel mean and std of the first 1,000 test images as "
               "the model sees them; then exit (experiments/crosscheck-reference)")
      ->group(run);
  app.add_flag("--list-compressors", c->list_compressors,
               "print the name of every compressor --compressor takes, one per line, and "
               "exit (experiments/compare-compressors runs them all)")
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
  app.add_option("--net", c->net,
                 "loopback: every rank on this machine's loopback, --bandwidth/--latency "
                 "shaped by the Channel; netns: experiments/run puts each rank on a network "
                 "namespace host of its own behind a bridge, links shaped by tc (needs root)")
      ->check(CLI::IsMember({"loopback", "netns"}))->group(rv);
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

}  // namespace sparseps

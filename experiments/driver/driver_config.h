#pragma once
// DriverConfig: every flag of one experiment-driver rank, parsed with CLI11 (the flags and
// their help: driver_flags.cc) and resolved (driver_config.cc: defaults that depend on other
// flags filled in, bandwidth and latency parsed, names checked against the registries; the
// virtual clock's flags: time_model_flags.cc) before anything starts, so that a bad flag
// fails at once with a message that says how to fix it. toJson() is the run directory's
// config.json.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "core/runtime/job.h"
#include "core/runtime/job_options.h"
#include "core/runtime/param_layout.h"
#include "core/virtual/time_model.h"
#include "experiments/datasets/dataset_options.h"
#include "experiments/models/model_init.h"
#include "optim/method_options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace sparseps {

struct DriverConfig {
  // The job as the Python front states it too (core/runtime/job_options.h): method, mode,
  // staleness, the rate schedule (lr defaults by the model's scaling rule and warmup_epochs
  // by the model when not given; lr_milestones from the --lr-milestones text below), seed,
  // peer timeout, and the method's options (a flag per row of optim/method_option_table.h;
  // lr0, the seed and num_workers come from the job). pushes_per_epoch is counted from the
  // data (makeJobSpec).
  JobOptions job;
  std::string preset;              // "" or one of presets.h (resolve_config.h applies it)
  int world_size = 5;
  int servers = 1;
  // Model and data.
  std::string model = "small_resnet";
  std::string dataset = "fashion-mnist";
  std::string data_dir;            // "" = defaultDataDir(dataset)
  int image_size = 0;              // imagenette: side of the crop; 0 = the model's own
  int synthetic_classes = 10;      // synthetic: classes (1000 gives an ImageNet model's head)
  int synthetic_size = 4096;       // synthetic: training examples; the test split a quarter
  std::string compressed_tensors = "multi-dim";  // kCompressedTensorsNames (param_layout.h)
  std::string init = "model";                    // kModelInitNames (model_init.h)
  std::string normalization = "dataset-std";     // kNormalizationNames (dataset_options.h)
  int epochs = 5;
  int batch_size = 64;
  // The --lr-milestones text: "auto", "none" or a comma list of epochs (resolve: job's).
  std::string lr_milestones = "auto";
  bool ignore_unread_options = false;  // a method option the method does not read: ignored
  // Links.
  std::string bandwidth = "1gbit";
  std::string latency = "0";
  // Process.
  std::string device = "cpu";      // the workers': cpu | cuda (device.h)
  int threads = 0;                 // 0 = max(1, cores / worker ranks on this machine)
  int compute_slots = -1;          // -1 = auto (computeSlotsFor); 0 = off
  std::string out;
  bool resume = false;
  int eval_every = 1;
  int64_t eval_samples = -1;       // test examples per evaluation; 0 = all; -1 = auto
  int64_t eval_bn_batches = -1;    // 0 = evaluate with the BN statistics the workers pushed;
                                   // -1 = auto (evalBnBatches)
  bool eval_workers_bn = false;    // also score each snapshot with the workers' statistics
  int64_t max_steps = 0;           // per worker; 0 = no limit
  bool stop_on_divergence = false; // divergence.h
  uint64_t checkpoint_every = 0;   // server versions; 0 = only at the end
  std::string run_secret;          // from SPARSEPS_RUN_SECRET; never written to disk
  std::string progress = "auto";   // auto | tty | plain | none
  int progress_columns = 0;        // tty: cut the updating line to this width; 0 = no cut
  bool dry_run = false;            // every check, then exit (dry_run.h)
  bool preflight = false;          // flags, data set opened, model built, then exit
  bool list_compressors = false;   // the registry's compressor names, then exit
  bool print_config = false;       // the resolved configuration as JSON, then exit
  bool print_model = false;        // the initial model and inputs as JSON, then exit
  // Clock: real processes over Gloo, or the whole job in this process in simulated time.
  std::string clock = "real";
  std::string step_time = "measured";  // measured | DURATION | profile:FILE
  double step_jitter = 0;              // coefficient of variation of a lognormal factor
  std::string stragglers;              // "KxS": K workers S times slower
  std::string codec_time = "measured"; // measured | DURATION
  double codec_scale = 1;
  // Rendezvous.
  int rank = -1;
  std::string master_addr;
  int master_port = 29500;
  std::string iface;
  // loopback: the links are the Channel's shaping; netns: each rank on a network namespace
  // host of its own (experiments/run --net=netns), the links the kernel's (tc).
  std::string net = "loopback";
  std::string store_dir;
  std::string run_id = "sparseps";

  // Filled in by resolve().
  double bandwidth_bps = 0;
  int64_t latency_ns = 0;
  TimeModel time;  // --clock=virtual

  bool virtualClock() const { return clock == "virtual"; }
  CompressedTensors compressedTensors() const;
  ModelInit modelInit() const;
  Normalization inputNormalization() const;

  int numWorkers() const { return world_size - servers; }
  bool isServer() const { return rank < servers; }
  int workerIndex() const { return rank - servers; }  // -1.. for servers
  bool isFirstWorker() const { return rank == servers; }
  // Whether the ranks meet at --master-addr through a TCP store: across machines, or on
  // netns hosts.
  bool meetAtMaster() const { return !master_addr.empty(); }
  // Whether the ranks run on other machines: their network is real, their run directories
  // are their own, this machine's cores are not divided among them. netns hosts are this
  // machine.
  bool multiMachine() const { return meetAtMaster() && net != "netns"; }
  // Whether the Channel shapes the links itself (netns hosts: tc does).
  bool channelShapes() const { return net != "netns" && (bandwidth_bps > 0 || latency_ns > 0); }
  // Which network ran the job, for the summary: virtual, loopback, netns or machines.
  std::string network() const;
  std::string checkpointPath() const { return out + "/checkpoint"; }
  // A worker's method state (momentum, residuals), saved after every whole epoch.
  std::string workerCheckpointPath(int worker) const {
    return checkpointPath() + ".worker" + std::to_string(worker);
  }
  std::string workerCheckpointPath() const { return workerCheckpointPath(workerIndex()); }

  // The test examples one evaluation scores, of a test split of test_size: --eval-samples
  // (0 = all of them).
  int64_t evalExamples(int64_t test_size) const;
  // The BN-statistics batches of one evaluation that scores `examples` test examples:
  // --eval-bn-batches, or with auto as many training examples as the evaluation scores, at
  // most 100 batches.
  int64_t evalBnBatches(int64_t examples) const;

  nlohmann::json toJson() const;
};

// Adds every flag to `app`, each with its help text and default. `method_names` are the
// registered methods (the help lists them and --method is checked against them).
void addDriverFlags(CLI::App& app, DriverConfig* config,
                    const std::vector<std::string>& method_names);

// The flags given on the command line ("--batch-size", ...): a preset sets only the others.
std::set<std::string> givenFlags(const CLI::App& app);


// The JobSpec of config.job (JobOptions::jobSpec) with pushes_per_epoch, all workers'
// batches of one epoch together, and this run's checkpoints. resolveDriverConfig checked it,
// so it fails only on a bad pushes_per_epoch.
absl::StatusOr<JobSpec> makeJobSpec(const DriverConfig& config, double pushes_per_epoch);

// LibTorch intra-op threads for this rank: --threads, or max(1, cores / worker ranks on this
// machine) where one machine runs every rank unless --master-addr is given.
int threadsFor(const DriverConfig& config);

// The cores of this machine (at least 1).
int machineCores();

// How many workers of this machine may run a forward/backward pass at once
// (experiments/driver/compute_slots.h): --compute-slots, or with auto the cores when one
// machine runs more workers than it has cores; 0: no limit.
int computeSlotsFor(const DriverConfig& config);

}  // namespace sparseps

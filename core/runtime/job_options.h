#pragma once
// JobOptions: the job as a user states it, from either front: the experiment driver's
// flags (experiments/driver) and the Python keywords (python/sparseps, through
// RankOptions). jobSpec() is the one place where they become the JobSpec every rank runs,
// so the two fronts cannot build it differently; jobOptionRows() names each option once
// (the Python keyword and config.json's key; the driver's flag is --name with dashes).

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "core/runtime/job_spec.h"
#include "optim/method_options.h"

namespace sparseps {

struct JobOptions {
  std::string method = "dgs";
  std::string mode = "async";        // kConsistencyModeNames
  int staleness = 0;                 // the bound of mode staleness
  int server_threads = 1;            // cores each server shard serves a push with
  std::string push_guard = "clip";   // kPushGuardNames
  double lr = 0.1;                   // the initial rate lr0
  std::vector<double> lr_milestones;  // epochs at which the rate is multiplied by lr_gamma
  double lr_gamma = 0.1;
  double warmup_epochs = 0;          // a linear warm-up of the rate over these epochs
  // Every worker's pushes in one epoch together, the schedule's clock; 0: none given (the
  // rate then never moves, and a schedule is refused).
  double pushes_per_epoch = 0;
  uint64_t seed = 1;                 // rank r's own randomness starts from seed + r
  double peer_timeout = 30;          // seconds a peer may stall (JobSpec::peer_timeout)
  double start_gap = 0;              // JobSpec::start_gap
  double start_lr = 0;               // JobSpec::start_lr
  // The method's options; lr0, num_workers and the seed come from the job.
  MethodOptions method_options;

  // The job of num_servers shards and num_workers workers: the rate schedule, the mode, the
  // wire's f16 (the method's f16 option), checked; the error names the option.
  absl::StatusOr<JobSpec> jobSpec(int num_servers, int num_workers) const;
};

// A field of JobOptions of type T.
template <typename T>
struct JobField {
  T JobOptions::*member;
};
using JobOptionRef = std::variant<JobField<std::string>, JobField<int>, JobField<double>,
                                  JobField<uint64_t>, JobField<std::vector<double>>>;

// One job option as both fronts name and explain it.
struct JobOptionRow {
  std::string name;  // "lr_milestones": the Python keyword and config.json's key
  std::string help;
  JobOptionRef ref;
  std::string flag() const;  // "--lr-milestones"
};

// Every job option, in the order the help lists them.
const std::vector<JobOptionRow>& jobOptionRows();

}  // namespace sparseps

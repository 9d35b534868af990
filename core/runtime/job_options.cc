#include "core/runtime/job_options.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace sparseps {

absl::StatusOr<JobSpec> JobOptions::jobSpec(int num_servers, int num_workers) const {
  JobSpec job;
  job.num_servers = num_servers;
  job.num_workers = num_workers;
  job.method = method;
  job.method_options = method_options;
  job.method_options.setLr0(lr).setSeed(seed);  // each rank gets seed + rank (ResolvedJob::forRank)
  auto parsed_mode = parseName(kConsistencyModeNames, "mode", mode);
  if (!parsed_mode.ok()) return parsed_mode.status();
  job.server.mode = *parsed_mode;
  job.server.staleness = staleness;
  auto guard = parseName(kPushGuardNames, "push_guard", push_guard);
  if (!guard.ok()) return guard.status();
  job.server.guard = *guard;
  job.server.threads = server_threads;
  job.server.lr = LrSchedule{lr, lr_milestones, lr_gamma, warmup_epochs};
  if (pushes_per_epoch <= 0 && (!lr_milestones.empty() || warmup_epochs > 0)) {
    return absl::InvalidArgumentError(
        "lr_milestones and warmup_epochs count epochs: give pushes_per_epoch too (every "
        "worker's steps in one epoch together), or the schedule cannot tell when an epoch ends");
  }
  // No epoch length given (and so no schedule): the rate stays at lr.
  job.server.pushes_per_epoch = pushes_per_epoch > 0 ? pushes_per_epoch : 1e18;
  job.encode.allowF16(method_options.f16);  // f16 values travel only where the method says
  job.peer_timeout = std::chrono::milliseconds(static_cast<int64_t>(peer_timeout * 1e3));
  job.start_gap = start_gap;
  job.start_lr = start_lr;
  if (auto s = job.validate(); !s.ok()) return s;
  return job;
}

std::string JobOptionRow::flag() const { return "--" + absl::StrReplaceAll(name, {{"_", "-"}}); }

const std::vector<JobOptionRow>& jobOptionRows() {
  using J = JobOptions;
  static const std::vector<JobOptionRow> rows = {
      {"method", "the compression method (the registry's names)",
       JobField<std::string>{&J::method}},
      {"mode",
       "consistency: async (apply and answer each push alone), sync (average a round of every "
       "worker's push), staleness (async, a worker waits when more than staleness steps "
       "ahead of the slowest)",
       JobField<std::string>{&J::mode}},
      {"staleness", "the bound s of mode staleness", JobField<int>{&J::staleness}},
      {"server_threads",
       "cores each server shard serves one push with: its segments updated and its reply "
       "made on that many threads, the result the same as with one",
       JobField<int>{&J::server_threads}},
      {"push_guard",
       absl::StrCat("how a push is bounded against the other workers' recent pushes: clip "
                    "(refuse one far beyond them, scale down one over ", kClipFactor,
                    " times their median norm, and keep a worker from running far ahead of "
                    "the median worker) or refuse (the refusal alone)"),
       JobField<std::string>{&J::push_guard}},
      {"lr", "the initial learning rate lr0", JobField<double>{&J::lr}},
      {"lr_milestones", "epochs at which the rate is multiplied by lr_gamma",
       JobField<std::vector<double>>{&J::lr_milestones}},
      {"lr_gamma", "the rate's factor at each milestone", JobField<double>{&J::lr_gamma}},
      {"warmup_epochs", "a linear learning-rate warm-up over the first epochs (may be fractional)",
       JobField<double>{&J::warmup_epochs}},
      {"pushes_per_epoch",
       "every worker's steps in one epoch together: the schedule's clock (milestones and "
       "warm-up count epochs)",
       JobField<double>{&J::pushes_per_epoch}},
      {"seed", "rank r seeds its own randomness (the sampled threshold) with seed + r",
       JobField<uint64_t>{&J::seed}},
      {"peer_timeout",
       "seconds a peer may stall before it is dropped; must exceed a step's compute time",
       JobField<double>{&J::peer_timeout}},
      {"start_gap",
       "seconds between the workers' starts: each server shard sends worker k its first "
       "model k x start_gap after the job starts (async mode; 0: all at once)",
       JobField<double>{&J::start_gap}},
      {"start_lr",
       "the rate the first model carries, which a worker's first push is made with (0: the "
       "schedule's; the DGS reference's server sends 0.001)",
       JobField<double>{&J::start_lr}},
  };
  return rows;
}

}  // namespace sparseps

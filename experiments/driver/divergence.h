#pragma once
// Divergence: one rule, for real and virtual-time runs alike, that names the step where a
// worker's training loss diverged. A loss diverges when it is not finite, or when it exceeds
// kDivergenceFactor times its reference: the mean of the worker's first kReferenceSteps
// losses (before its step kReferenceSteps + 1, of the losses it has; at its first step only a
// non-finite loss counts). A cross-entropy that
// starts near ln(classes) = 2.3 is thus called diverged above 230, which no run that is
// still learning reaches. The first divergence of each worker is reported in its log and
// in summary.json (diverged_at_step, diverged_worker, diverged_loss); with
// --stop-on-divergence the run ends there (the launcher exits with kDivergedExitCode).
// Without it the run goes on, except for a worker whose loss is not finite: its gradient
// cannot be sent (the wire refuses non-finite values), so that worker stops and leaves.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sparseps {

inline constexpr double kDivergenceFactor = 100;
inline constexpr int kReferenceSteps = 10;
// experiments/run's exit status for a run that --stop-on-divergence ended.
inline constexpr int kDivergedExitCode = 4;

struct Divergence {
  uint64_t step = 0;      // the worker's own step count (1 = its first step)
  double loss = 0;
  double reference = 0;   // 0: no reference (the loss was not finite)
  double seconds = 0;     // when, in the run's time (simulated in virtual time)

  // "loss 1.6e+15 at step 27 is over 100 x 2.31, the mean of the first 10 steps"
  std::string describe() const;
  // {"step", "loss" (a string for a non-finite loss, which JSON cannot hold), "reference",
  // "seconds"}
  nlohmann::json toJson() const;
  // Whether the worker stops here instead of pushing this step: with --stop-on-divergence,
  // or when the loss is not finite.
  bool stopsWorker(bool stop_on_divergence) const;
  // The line a worker's log (and a virtual run's console) shows, saying what happens next.
  std::string message(int worker, bool stop_on_divergence) const;
};

class DivergenceWatch {
 public:
  // The divergence the first time a loss meets the rule; nullopt otherwise, and ever after.
  std::optional<Divergence> observe(uint64_t step, double loss, double seconds);

 private:
  double sum_ = 0;
  int count_ = 0;
  bool fired_ = false;
};

// The file a worker that stops on divergence writes in the run directory; the other workers
// of the job stop at their next step when they see it.
std::string divergenceStopPath(const std::string& out);

}  // namespace sparseps

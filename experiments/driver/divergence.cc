#include "experiments/driver/divergence.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace sparseps {

std::string Divergence::describe() const {
  if (!std::isfinite(loss)) {
    return absl::StrFormat("loss %s at step %d is not finite", std::isnan(loss) ? "nan" : "inf",
                           step);
  }
  return absl::StrFormat("loss %g at step %d is over %g x %.4g, the mean of the first %d steps",
                         loss, step, kDivergenceFactor, reference,
                         std::min<uint64_t>(step - 1, kReferenceSteps));
}

nlohmann::json Divergence::toJson() const {
  nlohmann::json j = {{"step", step}, {"reference", reference}, {"seconds", seconds}};
  if (std::isfinite(loss)) {
    j["loss"] = loss;
  } else {
    j["loss"] = std::isnan(loss) ? "nan" : (loss > 0 ? "inf" : "-inf");
  }
  return j;
}

bool Divergence::stopsWorker(bool stop_on_divergence) const {
  return stop_on_divergence || !std::isfinite(loss);
}

std::string Divergence::message(int worker, bool stop_on_divergence) const {
  const char* next = stop_on_divergence ? "the run stops (--stop-on-divergence)"
                     : stopsWorker(false)
                         ? "this worker stops (its gradient cannot be sent); the others go on"
                         : "the run goes on (--stop-on-divergence would end it)";
  return absl::StrFormat("worker %d's training diverged: %s; %s", worker, describe(), next);
}

std::optional<Divergence> DivergenceWatch::observe(uint64_t step, double loss, double seconds) {
  if (fired_) return std::nullopt;
  const bool finite = std::isfinite(loss);
  const double reference = count_ > 0 ? sum_ / count_ : 0;
  if (!finite || (reference > 0 && loss > kDivergenceFactor * reference)) {
    fired_ = true;
    return Divergence{step, loss, finite ? reference : 0, seconds};
  }
  if (count_ < kReferenceSteps) {
    sum_ += loss;
    ++count_;
  }
  return std::nullopt;
}

std::string divergenceStopPath(const std::string& out) { return out + "/diverged.json"; }

}  // namespace sparseps

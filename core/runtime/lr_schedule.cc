#include "core/runtime/lr_schedule.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace sparseps {

double LrSchedule::at(double epoch) const {
  double lr = lr0;
  for (double m : milestones) {
    if (epoch >= m) lr *= gamma;
  }
  if (warmup_epochs > 0 && epoch < warmup_epochs) lr *= (epoch + 1e-9) / warmup_epochs;
  return lr;
}

absl::Status LrSchedule::validate() const {
  if (!(lr0 > 0) || !std::isfinite(lr0)) {
    return absl::InvalidArgumentError(absl::StrCat("lr: must be a positive number, got ", lr0));
  }
  if (!(gamma > 0) || gamma > 1) {
    return absl::InvalidArgumentError(absl::StrCat("lr gamma: must be in (0, 1], got ", gamma));
  }
  for (size_t i = 0; i < milestones.size(); ++i) {
    if (milestones[i] < 0 || (i > 0 && milestones[i] <= milestones[i - 1])) {
      return absl::InvalidArgumentError(
          "lr milestones: must be non-negative epochs in increasing order");
    }
  }
  if (warmup_epochs < 0) return absl::InvalidArgumentError("lr warm-up epochs: must be >= 0");
  return absl::OkStatus();
}

}  // namespace sparseps

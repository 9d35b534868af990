#pragma once
// The learning-rate schedule lives here and only here: the server evaluates it and
// every reply carries the current rate, so workers never compute it themselves.
// Step decay: lr = lr0 * gamma^(number of milestones <= epoch), with an optional
// linear warm-up over the first warmup_epochs.

#include <vector>

#include "absl/status/status.h"

namespace sparseps {

struct LrSchedule {
  double lr0 = 0.1;
  std::vector<double> milestones;  // epochs, increasing (the DGS runs: 30, 40)
  double gamma = 0.1;
  double warmup_epochs = 0.0;

  double at(double epoch) const;
  absl::Status validate() const;
};

}  // namespace sparseps

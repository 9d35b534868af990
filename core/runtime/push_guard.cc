#include "core/runtime/push_guard.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/runtime/median.h"

namespace sparseps {

PushGuard::PushGuard(PushGuardRule rule, int num_workers)
    : rule_(rule), views_(num_workers), clipped_(num_workers, 0) {}

bool PushGuard::gatherOthers(int worker) {
  scratch_largest_.clear();
  scratch_norm_.clear();
  for (size_t w = 0; w < views_.size(); ++w) {
    if (static_cast<int>(w) == worker || views_[w].taken == 0) continue;
    viewMedians(views_[w]);
    scratch_largest_.push_back(view_largest_);
    scratch_norm_.push_back(view_norm_);
  }
  if (scratch_largest_.empty()) return false;
  others_largest_ = upperMedian(scratch_largest_);
  others_norm_ = upperMedian(scratch_norm_);
  return true;
}

void PushGuard::viewMedians(const View& v) {
  one_largest_ = v.largest;
  one_norm_ = v.norm;
  view_largest_ = upperMedian(one_largest_);
  view_norm_ = upperMedian(one_norm_);
}

absl::StatusOr<float> PushGuard::admit(int worker, float largest, double norm,
                                       absl::FunctionRef<float()> model_largest) {
  View& own = views_[static_cast<size_t>(worker)];
  const bool others = gatherOthers(worker);
  bool compared = others;
  if (!others && own.taken >= kPoisonWarmup) {  // alone in its job: its own history
    viewMedians(own);
    others_largest_ = view_largest_;
    compared = true;
  }
  if (!compared) {
    const double bound = kModelFactor * std::max(1.0f, model_largest());
    if (largest > bound) {
      return absl::InvalidArgumentError(absl::StrCat(
          "its largest value ", largest, " is over ", kModelFactor,
          " times the model's largest value (1 if less) before any other worker pushed: ",
          "a poisoned or diverged push"));
    }
    remember(worker, largest, norm);
    return 1.0f;
  }
  if (largest > kPoisonFactor * std::max<double>(others_largest_, kPoisonFloor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "its largest value ", largest, " is over ", kPoisonFactor,
        " times the median largest value of the other workers' recent pushes (",
        others_largest_, "; ", kPoisonFloor, " if less): a poisoned or diverged push"));
  }
  remember(worker, largest, norm);
  // A worker alone has nobody to be outvoted by; others that pushed only zeros give no
  // radius.
  const double radius = kClipFactor * others_norm_;
  if (rule_ != PushGuardRule::kClip || !others || !(radius > 0) || !(norm > radius)) return 1.0f;
  ++clipped_[static_cast<size_t>(worker)];
  return static_cast<float>(radius / norm);
}

void PushGuard::remember(int worker, float largest, double norm) {
  View& v = views_[static_cast<size_t>(worker)];
  if (v.largest.size() < kGuardHistory) {
    v.largest.push_back(largest);
    v.norm.push_back(norm);
  } else {
    v.largest[v.taken % kGuardHistory] = largest;
    v.norm[v.taken % kGuardHistory] = norm;
  }
  ++v.taken;
}

void PushGuard::forget(int worker) { views_[static_cast<size_t>(worker)] = View{}; }

}  // namespace sparseps

#include "optim/method_options.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "compressors/registry.h"

namespace sparseps {

namespace {

absl::Status bad(absl::string_view field, absl::string_view rule, double got,
                 absl::string_view owner = "MethodOptions") {
  return absl::InvalidArgumentError(
      absl::StrCat(owner, ".", field, ": must be ", rule, ", got ", got));
}

bool isFraction(double v) { return v > 0.0 && v <= 1.0; }  // false for NaN too

}  // namespace

double DgcOptions::densityAt(int epoch, double density) const {
  if (warmup && epoch >= 0 && static_cast<size_t>(epoch) < warmup_densities.size()) {
    // The warm-up only ever sends more than the target: never below it.
    return std::max(density, warmup_densities[static_cast<size_t>(epoch)]);
  }
  return density;
}

absl::Status GdOptions::validate() const {
  if (compressor.empty()) return absl::OkStatus();
  if (auto made = makeRegisteredCompressor(compressor); !made.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GdOptions.compressor: ", made.status().message()));
  }
  return absl::OkStatus();
}

absl::Status DgcOptions::validate() const {
  if (!(clip_norm >= 0.0) || !std::isfinite(clip_norm)) {
    return bad("clip_norm", "a finite number >= 0 (0 = off)", clip_norm, "DgcOptions");
  }
  if (!warmup) return absl::OkStatus();  // the schedule is only checked when it is used
  if (warmup_densities.empty()) {
    return absl::InvalidArgumentError(
        "DgcOptions.warmup_densities: must not be empty when warmup is on");
  }
  for (size_t i = 0; i < warmup_densities.size(); ++i) {
    if (!isFraction(warmup_densities[i])) {
      return bad(absl::StrCat("warmup_densities[", i, "]"), "in (0, 1]", warmup_densities[i],
                 "DgcOptions");
    }
  }
  return absl::OkStatus();
}

absl::Status MethodOptions::validate() const {
  if (!(lr0 > 0.0) || !std::isfinite(lr0)) return bad("lr0", "a finite number > 0", lr0);
  if (!(momentum >= 0.0 && momentum < 1.0)) return bad("momentum", "in [0, 1)", momentum);
  if (!(weight_decay >= 0.0) || !std::isfinite(weight_decay)) {
    return bad("weight_decay", "a finite number >= 0", weight_decay);
  }
  if (weight_decay_delay < 0) return bad("weight_decay_delay", ">= 0 steps", weight_decay_delay);
  if (!isFraction(density)) return bad("density", "in (0, 1]", density);
  if (!isFraction(server_density)) return bad("server_density", "in (0, 1]", server_density);
  if (resync_every < 1) return bad("resync_every", ">= 1 pushes", resync_every);
  if (num_workers < 1) return bad("num_workers", ">= 1", num_workers);
  if (auto s = gd.validate(); !s.ok()) return s;
  return dgc.validate();
}

}  // namespace sparseps

#include "core/virtual/time_model.h"

#include <time.h>

#include <cmath>

#include "absl/strings/str_cat.h"

namespace sparseps {

absl::Status TimeModel::validate() const {
  const auto bad = [](const char* field, const char* rule, double got) {
    return absl::InvalidArgumentError(absl::StrCat("time model: ", field, " ", rule, ", got ", got));
  };
  if (step == Step::kFixed && !(step_seconds > 0 && std::isfinite(step_seconds))) {
    return bad("step time", "must be a positive duration", step_seconds);
  }
  if (!(jitter_cv >= 0 && std::isfinite(jitter_cv))) return bad("jitter", "must be >= 0", jitter_cv);
  if (stragglers < 0) return bad("stragglers", "must be >= 0 workers", stragglers);
  if (!(straggler_factor >= 1 && std::isfinite(straggler_factor))) {
    return bad("straggler slowdown", "must be at least 1", straggler_factor);
  }
  if (!codec_measured && !(codec_seconds >= 0 && std::isfinite(codec_seconds))) {
    return bad("codec time", "must be >= 0", codec_seconds);
  }
  if (!(codec_scale >= 0 && std::isfinite(codec_scale))) {
    return bad("codec scale", "must be >= 0", codec_scale);
  }
  if (link.bits_per_second < 0 || link.latency_ns < 0) {
    return absl::InvalidArgumentError("time model: link bandwidth and latency must be >= 0");
  }
  return absl::OkStatus();
}

double threadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace sparseps

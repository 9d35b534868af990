#include "experiments/driver/time_model_flags.h"

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "transport/link_shaping.h"

namespace sparseps {
namespace {

// --step-time=profile:FILE: the seconds per step of `model` at `batch` from a JSON file
// {"model": {"batch": seconds, ...}, ...}.
absl::StatusOr<double> profileStepSeconds(const std::string& path, const std::string& model,
                                          int batch) {
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("--step-time=profile:", path, ": cannot read ", path));
  }
  const nlohmann::json profile = nlohmann::json::parse(file, nullptr, false);
  if (profile.is_discarded() || !profile.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--step-time=profile:", path, ": not a JSON object {\"model\": {\"batch\": seconds}}"));
  }
  if (!profile.contains(model) || !profile[model].is_object()) {
    std::vector<std::string> models;
    for (const auto& item : profile.items()) models.push_back(item.key());
    return absl::NotFoundError(absl::StrCat("--step-time=profile:", path, " has no model ", model,
                                            " (it has: ", absl::StrJoin(models, ", "), ")"));
  }
  const nlohmann::json& entry = profile[model];
  const std::string key = std::to_string(batch);
  if (!entry.contains(key) || !entry[key].is_number() || !(entry[key].get<double>() > 0)) {
    std::vector<std::string> batches;
    for (const auto& item : entry.items()) batches.push_back(item.key());
    return absl::NotFoundError(absl::StrCat(
        "--step-time=profile:", path, " has no positive step time for ", model, " at batch ",
        batch, " (batches it has: ", absl::StrJoin(batches, ", "), ")"));
  }
  return entry[key].get<double>();
}

}  // namespace

absl::Status resolveTimeModel(DriverConfig* c) {
  const bool touched = c->step_time != "measured" || c->step_jitter != 0 ||
                       !c->stragglers.empty() || c->codec_time != "measured" ||
                       c->codec_scale != 1;
  if (!c->virtualClock()) {
    if (touched) {
      return absl::InvalidArgumentError(
          "--step-time, --step-jitter, --stragglers, --codec-time and --codec-scale model "
          "time in a virtual-time job: add --clock=virtual");
    }
    return absl::OkStatus();
  }
  TimeModel& t = c->time;
  if (c->step_time == "measured") {
    t.step = TimeModel::Step::kMeasured;
  } else if (absl::StartsWith(c->step_time, "profile:")) {
    auto seconds = profileStepSeconds(c->step_time.substr(8), c->model, c->batch_size);
    if (!seconds.ok()) return seconds.status();
    t.step = TimeModel::Step::kFixed;
    t.step_seconds = *seconds;
  } else {
    auto ns = parseDuration(c->step_time);
    if (!ns.ok() || *ns <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--step-time: expected measured, a positive duration (e.g. 30ms) or profile:FILE, "
          "got '", c->step_time, "'"));
    }
    t.step = TimeModel::Step::kFixed;
    t.step_seconds = static_cast<double>(*ns) * 1e-9;
  }
  t.jitter_cv = c->step_jitter;
  if (!c->stragglers.empty()) {
    std::vector<std::string> parts = absl::StrSplit(c->stragglers, 'x');
    int count = 0;
    double factor = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &count) ||
        !absl::SimpleAtod(parts[1], &factor) || count < 0 || count > c->numWorkers() ||
        !(factor >= 1) || !std::isfinite(factor)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--stragglers: expected KxS with 0 <= K <= ", c->numWorkers(),
          " workers and a slowdown S >= 1 (e.g. 2x3), got '", c->stragglers, "'"));
    }
    t.stragglers = count;
    t.straggler_factor = factor;
  }
  if (c->codec_time == "measured") {
    t.codec_measured = true;
  } else {
    auto ns = parseDuration(c->codec_time);
    if (!ns.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--codec-time: expected measured or a duration >= 0 (e.g. 2ms, 0), got '",
          c->codec_time, "'"));
    }
    t.codec_measured = false;
    t.codec_seconds = static_cast<double>(*ns) * 1e-9;
  }
  t.codec_scale = c->codec_scale;
  t.seed = c->job.seed;
  return t.validate();
}

}  // namespace sparseps

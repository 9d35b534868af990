#include "experiments/driver/resume_records.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sparseps {

absl::Status checkWorkerCheckpoint(const WorkerCheckpoint& saved, const std::string& path,
                                   const std::string& method, uint64_t layout_fingerprint) {
  const char* zero_advice = "; resume with that run's flags, or delete it to start this "
                            "worker's momentum and residuals from zero";
  if (saved.method != method) {
    return absl::FailedPreconditionError(absl::StrCat("worker checkpoint ", path,
                                                      " holds --method=", saved.method,
                                                      " state, this run is --method=", method,
                                                      zero_advice));
  }
  if (saved.layout_fingerprint != layout_fingerprint) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker checkpoint ", path, " was written for another model (layout fingerprint ",
        absl::Hex(saved.layout_fingerprint), ", this model ", absl::Hex(layout_fingerprint), ")",
        zero_advice));
  }
  return absl::OkStatus();
}

absl::Status checkResumable(const DriverConfig& config, uint64_t layout_fingerprint) {
  for (int s = 0; s < config.servers; ++s) {
    const std::string path = absl::StrCat(config.checkpointPath(), ".shard", s);
    auto saved = loadCheckpointToResume(path, layout_fingerprint);
    if (absl::IsNotFound(saved.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--resume: no server checkpoint ", path, " (a run writes one at its end, and every "
          "--checkpoint-every versions)"));
    }
    if (!saved.ok()) return saved.status();
  }
  for (int w = 0; w < config.numWorkers(); ++w) {
    const std::string path = config.workerCheckpointPath(w);
    auto saved = loadWorkerCheckpoint(path);
    if (absl::IsNotFound(saved.status())) continue;  // its state starts from zero
    if (!saved.ok()) return saved.status();
    if (auto st = checkWorkerCheckpoint(*saved, path, config.job.method, layout_fingerprint);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> cutMetricsBack(const std::string& path,
                                      const std::vector<uint64_t>& steps_kept) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return size_t{0};
  const std::string temp = absl::StrCat(path, ".cut.", ::getpid());
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", temp, ": ", std::strerror(errno)));
  size_t cut = 0;
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const bool whole = !row.is_discarded() && row.contains("worker") && row.contains("step");
    bool kept = whole;
    if (whole) {
      const auto worker = row["worker"].get<int64_t>();
      kept = worker >= 0 && static_cast<size_t>(worker) < steps_kept.size() &&
             row["step"].get<uint64_t>() <= steps_kept[static_cast<size_t>(worker)];
    }
    if (kept) {
      out << line << '\n';
    } else {
      ++cut;
    }
  }
  out.flush();
  if (!out) {
    std::remove(temp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", temp, ": ", std::strerror(errno)));
  }
  out.close();
  if (cut == 0) {
    std::remove(temp.c_str());
    return size_t{0};
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot rename ", temp, " to ", path, ": ", std::strerror(errno)));
  }
  return cut;
}

double lastMetricsTime(const std::string& path, int worker) {
  double time = 0;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!row.is_discarded() && row.value("worker", -1) == worker) time = row.value("time", time);
  }
  return time;
}

}  // namespace sparseps

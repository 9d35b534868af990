#include "experiments/driver/resume_records.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace sparseps {

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

#include "experiments/driver/run_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace sparseps {
namespace {

absl::Status errnoError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

absl::Status makeDirs(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  return absl::OkStatus();
}

absl::Status checkNewRunDir(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> records;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (std::find(kRunScaffolding.begin(), kRunScaffolding.end(), name) == kRunScaffolding.end()) {
      records.push_back(name);
    }
  }
  if (error && error != std::errc::no_such_file_or_directory) {
    return absl::InternalError(absl::StrCat("cannot list ", dir, ": ", error.message()));
  }
  if (records.empty()) return absl::OkStatus();
  std::sort(records.begin(), records.end());
  const size_t shown = std::min<size_t>(records.size(), 5);
  return absl::FailedPreconditionError(absl::StrCat(
      "run directory ", dir, " already holds a run (",
      absl::StrJoin(records.begin(), records.begin() + shown, ", "),
      records.size() > shown ? ", ..." : "",
      "); continue that run with --resume, or give a new --out (without --out, "
      "experiments/run names a new directory)"));
}

absl::Status writeJsonFile(const std::string& path, const nlohmann::json& value) {
  const std::string temp = absl::StrCat(path, ".tmp.", ::getpid());
  {
    std::ofstream file(temp);
    if (!file) return errnoError("cannot write", temp);
    file << value.dump(2) << "\n";
    if (!file.flush()) return errnoError("cannot write", temp);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) return errnoError("cannot rename to", path);
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> readJsonFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  nlohmann::json value = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return absl::DataLossError(absl::StrCat(path, ": not valid JSON"));
  return value;
}

std::string gitRevision() {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen("git rev-parse HEAD 2>/dev/null", "r"), pclose);
  if (!pipe) return "";
  char line[128] = {0};
  if (!std::fgets(line, sizeof line, pipe.get())) return "";
  return std::string(absl::StripSuffix(line, "\n"));
}

std::string hostName() {
  char name[256] = {0};
  return gethostname(name, sizeof name - 1) == 0 ? name : "";
}

absl::StatusOr<JsonLinesWriter> JsonLinesWriter::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return errnoError("cannot open", path);
  return JsonLinesWriter(fd, path);
}

JsonLinesWriter::JsonLinesWriter(JsonLinesWriter&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)), buffer_(std::move(other.buffer_)) {
  other.fd_ = -1;
}

JsonLinesWriter::~JsonLinesWriter() {
  if (fd_ < 0) return;
  (void)flush();
  ::close(fd_);
}

absl::Status JsonLinesWriter::append(const nlohmann::json& line) {
  buffer_ += line.dump();
  buffer_ += '\n';
  return buffer_.size() >= kFlushBytes ? flush() : absl::OkStatus();
}

absl::Status JsonLinesWriter::flush() {
  if (buffer_.empty()) return absl::OkStatus();
  // One write() per flush keeps the lines of concurrent writers whole; a short write on a
  // regular file means the disk is full, which is an error here.
  const ssize_t n = ::write(fd_, buffer_.data(), buffer_.size());
  if (n != static_cast<ssize_t>(buffer_.size())) return errnoError("cannot append to", path_);
  buffer_.clear();
  return absl::OkStatus();
}

std::vector<nlohmann::json> JsonLinesFollower::newLines() {
  std::vector<nlohmann::json> lines;
  std::ifstream file(path_, std::ios::binary);
  if (!file || !file.seekg(static_cast<std::streamoff>(offset_))) return lines;
  std::string line;
  while (std::getline(file, line) && !file.eof()) {  // eof: the last line has no newline yet
    offset_ += line.size() + 1;
    nlohmann::json value = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!value.is_discarded()) lines.push_back(std::move(value));
  }
  return lines;
}

}  // namespace sparseps

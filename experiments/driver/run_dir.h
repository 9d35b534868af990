#pragma once
// The run directory's files: whole JSON documents (config.json, summary.json, worker<k>.json,
// server.json) written atomically (temp file + rename, so a reader never sees half a file),
// and JSON-lines logs (metrics.jsonl, eval.jsonl) appended through a buffer, which another
// process can follow as they grow (JsonLinesFollower). The workers of
// one machine share metrics.jsonl: the file is opened O_APPEND and each flush is one
// write() of whole lines, so lines of different processes never interleave.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sparseps {

// Creates dir (and its parents) if missing.
absl::Status makeDirs(const std::string& dir);

// The entries a job makes in its run directory before its ranks have met: the launcher's
// logs, the rendezvous store, the compute slots. Nothing else is written until then.
inline const std::vector<std::string> kRunScaffolding = {"logs", "store", "slots"};

// A new run (no --resume) must not write into a directory that holds another run's records
// (config.json, metrics, evaluations, checkpoints, summary): the two would mix. OK when dir
// is missing or holds only kRunScaffolding; FailedPrecondition naming what it holds and
// what to do otherwise.
absl::Status checkNewRunDir(const std::string& dir);

absl::Status writeJsonFile(const std::string& path, const nlohmann::json& value);
absl::StatusOr<nlohmann::json> readJsonFile(const std::string& path);

// `git rev-parse HEAD` of the working directory, or "" when unavailable.
std::string gitRevision();
std::string hostName();

class JsonLinesWriter {
 public:
  static absl::StatusOr<JsonLinesWriter> open(const std::string& path);
  JsonLinesWriter(JsonLinesWriter&& other) noexcept;
  JsonLinesWriter& operator=(JsonLinesWriter&&) = delete;
  JsonLinesWriter(const JsonLinesWriter&) = delete;
  ~JsonLinesWriter();

  // Buffers one line; writes the buffer out when it grows past kFlushBytes.
  absl::Status append(const nlohmann::json& line);
  absl::Status flush();

 private:
  static constexpr size_t kFlushBytes = 64 * 1024;
  JsonLinesWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
  std::string buffer_;
};

// Reads the lines appended to a JSON-lines file since the last call (the file may not exist
// yet). Only whole lines count: a line still being written is read next time.
class JsonLinesFollower {
 public:
  explicit JsonLinesFollower(std::string path) : path_(std::move(path)) {}
  std::vector<nlohmann::json> newLines();

 private:
  std::string path_;
  uint64_t offset_ = 0;
};

}  // namespace sparseps

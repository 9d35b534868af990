#include "experiments/driver/snapshot_queue.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/runtime/checkpoint.h"

namespace sparseps {

SnapshotQueue::SnapshotQueue(std::string dir, size_t in_memory,
                             std::function<void(const std::string&)> log)
    : dir_(std::move(dir)), in_memory_(in_memory), log_(std::move(log)) {}

SnapshotQueue::~SnapshotQueue() {
  for (const Waiting& w : waiting_) {
    std::error_code ignored;
    if (!w.file.empty()) std::filesystem::remove(w.file, ignored);
  }
}

size_t SnapshotQueue::inMemory() const {
  return static_cast<size_t>(std::count_if(waiting_.begin(), waiting_.end(),
                                           [](const Waiting& w) { return w.file.empty(); }));
}

std::string SnapshotQueue::fileFor(const Snapshot& snapshot) const {
  return absl::StrCat(dir_, "/", snapshot.final ? std::string("final")
                                                : absl::StrCat(snapshot.index), ".waiting");
}

void SnapshotQueue::push(Snapshot snapshot) {
  Waiting w{std::move(snapshot), ""};
  if (inMemory() >= in_memory_) {
    ServerCheckpoint saved;
    saved.version = w.snapshot.version;
    saved.pushes = w.snapshot.pushes;
    saved.model = std::move(w.snapshot.params);
    saved.buffers = std::move(w.snapshot.buffers);
    const std::string path = fileFor(w.snapshot);
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    absl::Status s = ec ? absl::InternalError(ec.message()) : saveCheckpoint(path, saved);
    if (s.ok()) {
      w.file = path;
      log_(absl::StrCat("the snapshot after ", w.snapshot.epoch, " epochs waits in ", path,
                        ": the evaluator is ", waiting_.size(), " snapshots behind training"));
    } else {
      w.snapshot.params = std::move(saved.model);
      w.snapshot.buffers = std::move(saved.buffers);
      log_(absl::StrCat("the snapshot after ", w.snapshot.epoch, " epochs waits in memory (",
                        path, " could not be written: ", s.message(), ")"));
    }
  }
  waiting_.push_back(std::move(w));
}

std::optional<absl::StatusOr<Snapshot>> SnapshotQueue::pop() {
  if (waiting_.empty()) return std::nullopt;
  Waiting w = std::move(waiting_.front());
  waiting_.pop_front();
  if (w.file.empty()) return absl::StatusOr<Snapshot>(std::move(w.snapshot));
  absl::StatusOr<ServerCheckpoint> saved = loadCheckpoint(w.file);
  if (!saved.ok()) {  // the file stays, for whoever wants to look at it
    return absl::StatusOr<Snapshot>(absl::DataLossError(absl::StrCat(
        "the snapshot after ", w.snapshot.epoch, " epochs could not be read back from ", w.file,
        ": ", saved.status().message())));
  }
  std::error_code ignored;
  std::filesystem::remove(w.file, ignored);
  w.snapshot.params = std::move(saved->model);
  w.snapshot.buffers = std::move(saved->buffers);
  return absl::StatusOr<Snapshot>(std::move(w.snapshot));
}

}  // namespace sparseps

#include "experiments/driver/snapshot_queue.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
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

size_t SnapshotQueue::adoptLeftOver(double pushes_per_epoch) {
  std::vector<std::pair<uint64_t, std::string>> found;  // (index, path); final sorts last
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (entry.path().extension() != ".waiting") continue;
    // <index>.waiting, final.waiting, or either with a ".<n>" fileFor added
    const std::string stem = entry.path().stem().string();
    const std::string name = stem.substr(0, stem.find('.'));
    uint64_t index = 0;
    if (name == "final") {
      index = std::numeric_limits<uint64_t>::max();
    } else if (!absl::SimpleAtoi(name, &index)) {
      continue;
    }
    found.emplace_back(index, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  size_t adopted = 0;
  for (const auto& [index, path] : found) {
    absl::StatusOr<ShardCheckpoint> saved = loadCheckpoint(path);
    if (!saved.ok()) {
      log_(absl::StrCat("a snapshot left waiting cannot be read, and is left as it is: ",
                        saved.status().message()));
      continue;
    }
    Waiting w;
    w.snapshot.final = index == std::numeric_limits<uint64_t>::max();
    w.snapshot.index = w.snapshot.final ? 0 : index;
    w.snapshot.version = saved->version;
    w.snapshot.pushes = saved->pushes;
    w.snapshot.epoch = static_cast<double>(saved->pushes) / pushes_per_epoch;
    w.snapshot.seconds = std::nan("");  // not kept in the file
    w.file = path;
    waiting_.push_back(std::move(w));
    ++adopted;
  }
  if (adopted > 0) {
    log_(absl::StrCat(adopted, " snapshots an earlier process left waiting in ", dir_,
                      " are scored first (the times they were taken are not known)"));
  }
  return adopted;
}

std::string SnapshotQueue::fileFor(const Snapshot& snapshot) const {
  const std::string name = snapshot.final ? std::string("final") : absl::StrCat(snapshot.index);
  // A resumed run may take a snapshot whose name one left by an earlier process still has.
  std::string path = absl::StrCat(dir_, "/", name, ".waiting");
  for (int n = 2; std::filesystem::exists(path); ++n) {
    path = absl::StrCat(dir_, "/", name, ".", n, ".waiting");
  }
  return path;
}

void SnapshotQueue::push(Snapshot snapshot) {
  Waiting w{std::move(snapshot), ""};
  if (inMemory() >= in_memory_) {
    ShardCheckpoint saved;
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
  absl::StatusOr<ShardCheckpoint> saved = loadCheckpoint(w.file);
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

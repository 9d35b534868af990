#pragma once
// SnapshotQueue: the snapshots waiting for the evaluator, in the order they were taken.
// None is ever dropped: when evaluation falls behind training (a busy machine leaves the
// idle-priority evaluator no time), the first `in_memory` waiting snapshots stay in memory
// and later ones wait on disk in `dir` (<index>.waiting, or final.waiting; the checkpoint
// format) until the evaluator reaches them, so memory stays bounded and every epoch is
// scored, after training at the latest. A snapshot that cannot be written stays in memory.
// The files a stopped process left (killed before it scored them) are taken up again by the
// next queue over the same directory: `experiments/run --resume` scores them first.

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/runtime/snapshot.h"

namespace sparseps {

class SnapshotQueue {
 public:
  // log: one line per snapshot sent to disk (and per one that could not be).
  SnapshotQueue(std::string dir, size_t in_memory, std::function<void(const std::string&)> log);
  ~SnapshotQueue();  // removes the files of snapshots never taken out

  // Queues, first and in order (by index, the final one last), the snapshots an earlier
  // process left waiting in the directory; their epoch is pushes / pushes_per_epoch and
  // their time is not known (NaN). Returns how many; a file that cannot be read is named in
  // the log and left alone.
  size_t adoptLeftOver(double pushes_per_epoch);

  void push(Snapshot snapshot);
  // The oldest snapshot with its model (read back from disk if it waited there, and its file
  // removed); nullopt when empty; an error naming the file when it cannot be read
  // (the file is left as it is).
  std::optional<absl::StatusOr<Snapshot>> pop();

  size_t size() const { return waiting_.size(); }
  bool empty() const { return waiting_.empty(); }
  size_t inMemory() const;

 private:
  struct Waiting {
    Snapshot snapshot;  // without params and buffers when `file` holds them
    std::string file;
  };
  std::string fileFor(const Snapshot& snapshot) const;

  std::string dir_;
  size_t in_memory_;
  std::function<void(const std::string&)> log_;
  std::deque<Waiting> waiting_;
};

}  // namespace sparseps

#include "core/runtime/shard_loop.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sparseps {

ShardLoop::ShardLoop(Endpoint& endpoint, ShardSession& session, const JobSpec& job,
                     uint64_t layout_fingerprint)
    : endpoint_(endpoint),
      session_(session),
      core_(session.core()),
      job_(job),
      layout_fingerprint_(layout_fingerprint),
      worker_ranks_(job.workerRanks()),
      checkpoint_path_(job.checkpointPathOf(endpoint.rank())) {}

int ShardLoop::workerOf(int rank) const {
  auto it = std::find(worker_ranks_.begin(), worker_ranks_.end(), rank);
  return static_cast<int>(it - worker_ranks_.begin());
}

ShardTime ShardLoop::now() const {
  return std::chrono::duration_cast<ShardTime>(std::chrono::steady_clock::now() - started_);
}

void ShardLoop::send() {
  for (size_t i = 0; i < out_.size(); ++i) {
    const int worker = out_[i].worker;
    if (!out_[i].cut.empty()) {
      endpoint_.drop(worker_ranks_[worker], out_[i].cut);
      continue;
    }
    absl::Status s = out_[i].status;
    if (s.ok()) s = endpoint_.send(worker_ranks_[worker], out_[i].bytes);
    if (s.ok()) {
      stats_.bytes_out += out_[i].bytes.size();
      ++stats_.messages_out;
      session_.sent(worker, now());
    } else {
      session_.sendFailed(worker, std::string(s.message()), now(), &out_);
    }
  }
  out_.clear();
}

absl::Status ShardLoop::maybeCheckpoint(bool final) {
  if (checkpoint_path_.empty()) return absl::OkStatus();
  const bool due = job_.checkpoint_every > 0 &&
                   core_.version() >= last_checkpoint_version_ + job_.checkpoint_every;
  if (!final && !due) return absl::OkStatus();
  last_checkpoint_version_ = core_.version();
  return saveCheckpoint(checkpoint_path_, core_.checkpoint(layout_fingerprint_));
}

absl::Status ShardLoop::run() {
  started_ = std::chrono::steady_clock::now();
  while (session_.anyListening()) {
    if (now() >= session_.nextTimeout()) session_.handleTimeout(now(), &out_);
    send();
    listening_ranks_.clear();
    for (size_t w = 0; w < worker_ranks_.size(); ++w) {
      if (session_.listening(static_cast<int>(w))) listening_ranks_.push_back(worker_ranks_[w]);
    }
    if (listening_ranks_.empty()) break;
    const ShardTime next = session_.nextTimeout();
    const Deadline wake =
        next == kNever ? kNoDeadline
                       : started_ + std::chrono::duration_cast<Deadline::duration>(next);
    if (auto s = endpoint_.receive(listening_ranks_, &frame_, wake); !s.ok()) {
      if (!absl::IsDeadlineExceeded(s)) return s;
      continue;  // the top of the loop handles what is due
    }
    const int worker = workerOf(frame_.src);
    if (!frame_.peer_status.ok()) {
      session_.peerFailed(worker, std::string(frame_.peer_status.message()), now(), &out_);
    } else if (session_.receive(worker, frame_.header, frame_.payload, now(), &out_).ok()) {
      stats_.bytes_in += frame_.header.size() + frame_.payload.size();
      ++stats_.messages_in;
    }
    if (auto s = maybeCheckpoint(false); !s.ok()) return s;
  }
  send();
  stats_.dropped = session_.dropped();
  stats_.clipped = session_.clipped();
  stats_.pushes = core_.pushes();
  stats_.epochs = core_.epoch();
  return maybeCheckpoint(true);
}

}  // namespace sparseps

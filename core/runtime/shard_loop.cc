#include "core/runtime/shard_loop.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/runtime/median.h"
#include "core/runtime/protocol.h"

namespace sparseps {

ShardLoop::ShardLoop(Endpoint& endpoint, ShardSession& session, const JobSpec& job,
                     uint64_t layout_fingerprint)
    : endpoint_(endpoint),
      session_(session),
      core_(session.core()),
      job_(job),
      layout_fingerprint_(layout_fingerprint),
      worker_ranks_(job.workerRanks()),
      checkpoint_path_(job.checkpointPathOf(endpoint.rank())),
      live_ranks_(worker_ranks_) {}

int ShardLoop::workerOf(int rank) const {
  auto it = std::find(worker_ranks_.begin(), worker_ranks_.end(), rank);
  return static_cast<int>(it - worker_ranks_.begin());
}

void ShardLoop::send() {
  // Dropping a worker can answer more (sync, staleness), appended to out_ and sent here.
  for (size_t i = 0; i < out_.size(); ++i) {
    const int worker = out_[i].worker;
    absl::Status s = out_[i].status;
    if (s.ok()) s = endpoint_.send(worker_ranks_[worker], out_[i].bytes);
    if (s.ok()) {
      stats_.bytes_out += out_[i].bytes.size();
      ++stats_.messages_out;
      served_[worker] = std::chrono::steady_clock::now();
    } else {
      drop(worker, absl::StrCat("cannot send to it: ", s.message()));
    }
  }
  out_.clear();
}

bool ShardLoop::stopListening(int rank) {
  auto it = std::find(live_ranks_.begin(), live_ranks_.end(), rank);
  if (it == live_ranks_.end()) return false;
  live_ranks_.erase(it);
  return true;
}

void ShardLoop::drop(int worker, const std::string& why, bool stalled) {
  const int rank = worker_ranks_[worker];
  if (!stopListening(rank)) return;
  job_.server.log(absl::StrCat("server: dropping worker ", worker, " (rank ", rank, "): ", why));
  const std::chrono::duration<double> since = std::chrono::steady_clock::now() - started_;
  stats_.dropped.push_back(DroppedWorker{worker, rank, since.count(), why});
  session_.lose(worker, &out_);
  // Tell the worker: other shards may still count it live, and it would wait for this
  // shard's reply forever. It stops; its departure ends it on the others. A dead worker
  // cannot be told, and need not be; a stalled one would not listen, so its connection
  // is closed instead, which it and the other shards see as this shard's death.
  if (stalled) {
    endpoint_.drop(rank, why);
    return;
  }
  session_.goodbye(worker, &out_);
}

Deadline ShardLoop::roundDeadline() {
  if (core_.waitingOn().empty()) {
    waiting_since_.reset();
    return kNoDeadline;
  }
  if (!waiting_since_) waiting_since_ = std::chrono::steady_clock::now();
  return *waiting_since_ + job_.peer_timeout;
}

void ShardLoop::dropStallers() {
  const double seconds = std::chrono::duration<double>(job_.peer_timeout).count();
  for (int worker : core_.waitingOn()) {
    drop(worker,
         absl::StrCat("held a ", nameOf(kConsistencyModeNames, job_.server.mode),
                      " round for ", seconds, " s without pushing"),
         /*stalled=*/true);
  }
  waiting_since_.reset();
}

void ShardLoop::notePush(int worker) {
  longest_step_[worker] =
      std::max(longest_step_[worker], std::chrono::steady_clock::now() - served_[worker]);
}

std::chrono::steady_clock::duration ShardLoop::progressBound(int worker) {
  scratch_.clear();
  for (const auto& step : longest_step_) {
    if (step.count() > 0) scratch_.push_back(step);
  }
  std::chrono::steady_clock::duration bound = kIdlePeerTimeouts * job_.peer_timeout;
  bound = std::max(bound, kIdleSteps * longest_step_[worker]);
  if (!scratch_.empty()) bound = std::max(bound, kIdleSteps * upperMedian(scratch_));
  return bound;
}

Deadline ShardLoop::pushDeadline() {
  Deadline first = kNoDeadline;
  for (int rank : live_ranks_) {
    const int w = workerOf(rank);
    if (!core_.awaitsReply(w)) first = std::min(first, served_[w] + progressBound(w));
  }
  return first;
}

void ShardLoop::dropIdle() {
  const auto now = std::chrono::steady_clock::now();
  auto seconds = [](std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  for (int rank : std::vector<int>(live_ranks_)) {
    const int w = workerOf(rank);
    const auto bound = progressBound(w);
    if (core_.awaitsReply(w) || now - served_[w] < bound) continue;
    drop(w,
         absl::StrFormat("made no push for %.1f s after it was served (the bound: %d peer "
                         "timeouts, or %d of its longest step or of the workers' median "
                         "step if longer: %.1f s)",
                         seconds(now - served_[w]), kIdlePeerTimeouts, kIdleSteps,
                         seconds(bound)),
         /*stalled=*/true);
  }
}

Deadline ShardLoop::startOf(int worker) const {
  return started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(job_.startSeconds(worker)));
}

Deadline ShardLoop::nextStart() const {
  if (started_workers_ == worker_ranks_.size()) return kNoDeadline;
  return startOf(static_cast<int>(started_workers_));
}

void ShardLoop::startDue() {
  while (started_workers_ < worker_ranks_.size() &&
         std::chrono::steady_clock::now() >= nextStart()) {
    const int w = static_cast<int>(started_workers_++);
    served_[w] = std::chrono::steady_clock::now();
    session_.start(w, &out_);
  }
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
  longest_step_.assign(worker_ranks_.size(), std::chrono::steady_clock::duration::zero());
  // Until it is started, a worker's idle bound counts from its start.
  served_.clear();
  for (size_t w = 0; w < worker_ranks_.size(); ++w) served_.push_back(startOf(static_cast<int>(w)));
  while (!live_ranks_.empty()) {
    startDue();
    send();
    const Deadline round = roundDeadline();
    const Deadline wake = std::min({round, pushDeadline(), nextStart()});
    if (auto s = endpoint_.receive(live_ranks_, &frame_, wake); !s.ok()) {
      if (!absl::IsDeadlineExceeded(s)) return s;
      if (std::chrono::steady_clock::now() >= round) dropStallers();
      dropIdle();
      continue;
    }
    const int worker = workerOf(frame_.src);
    if (!frame_.peer_status.ok()) {
      drop(worker, std::string(frame_.peer_status.message()));
    } else {
      auto received = session_.receive(worker, frame_.header, frame_.payload, &out_);
      if (!received.ok()) {
        drop(worker, absl::StrCat("bad message: ", received.status().message()));
      } else {
        stats_.bytes_in += frame_.header.size() + frame_.payload.size();
        ++stats_.messages_in;
        if (*received == Received::kPush) notePush(worker);
        if (*received == Received::kGoodbye) stopListening(frame_.src);
      }
    }
    if (auto s = maybeCheckpoint(false); !s.ok()) return s;
  }
  send();
  for (size_t w = 0; w < worker_ranks_.size(); ++w) {
    const uint64_t clipped = core_.clippedPushes()[w];
    if (clipped > 0) stats_.clipped.push_back({static_cast<int>(w), worker_ranks_[w], clipped});
  }
  stats_.pushes = core_.pushes();
  stats_.epochs = core_.epoch();
  return maybeCheckpoint(true);
}

}  // namespace sparseps

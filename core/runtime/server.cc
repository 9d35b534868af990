#include "core/runtime/server.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/runtime/protocol.h"

namespace sparseps {

Server::Server(Endpoint& endpoint, ServerCore& core, const JobSpec& job, SegmentSpecs local_specs,
               uint64_t layout_fingerprint)
    : endpoint_(endpoint),
      core_(core),
      job_(job),
      specs_(std::move(local_specs)),
      layout_fingerprint_(layout_fingerprint),
      worker_ranks_(job.workerRanks()),
      checkpoint_path_(job.checkpointPathOf(endpoint.rank())),
      live_ranks_(worker_ranks_) {
  // A push is used before the next receive reuses frame_ (a sync round keeps a copy, which
  // owns its values), so its dense segments may borrow the frame's payload.
  limits_.borrowDense(core_.readsBorrowedDense());
  for (const auto& spec : specs_) limits_.allow(spec.id, static_cast<uint32_t>(spec.numel));
  if (core_.numBuffers() > 0) {
    limits_.allow(static_cast<uint32_t>(specs_.size()), static_cast<uint32_t>(core_.numBuffers()));
  }
}

int Server::workerOf(int rank) const {
  auto it = std::find(worker_ranks_.begin(), worker_ranks_.end(), rank);
  return static_cast<int>(it - worker_ranks_.begin());
}

absl::Status Server::sendTo(int worker, MessageHeader header, const Message& segments) {
  header.sender_rank = static_cast<uint32_t>(endpoint_.rank());
  if (auto s = encodeMessage(header, segments, job_.encode, &out_); !s.ok()) return s;
  if (auto s = endpoint_.send(worker_ranks_[worker], out_); !s.ok()) return s;
  stats_.bytes_out += out_.size();
  ++stats_.messages_out;
  return absl::OkStatus();
}

absl::Status Server::sendModel(int worker) {
  Message segments = denseMessage(specs_, core_.model());
  if (core_.numBuffers() > 0) {
    segments.emplace_back();
    denseSegment(core_.averagedBuffers(), static_cast<uint32_t>(specs_.size()), &segments.back());
  }
  MessageHeader header;
  header.kind = MessageKind::kModel;
  header.model_version = core_.version();
  header.worker_step = core_.workerSteps(worker);  // where this worker resumes in its data
  header.learning_rate = core_.lr();
  return sendTo(worker, header, segments);
}

bool Server::stopListening(int rank) {
  auto it = std::find(live_ranks_.begin(), live_ranks_.end(), rank);
  if (it == live_ranks_.end()) return false;
  live_ranks_.erase(it);
  return true;
}

void Server::drop(int worker, const std::string& why, std::vector<Reply>* replies,
                  bool stalled) {
  const int rank = worker_ranks_[worker];
  if (!stopListening(rank)) return;
  job_.server.log(absl::StrCat("server: dropping worker ", worker, " (rank ", rank, "): ", why));
  const std::chrono::duration<double> since = std::chrono::steady_clock::now() - started_;
  stats_.dropped.push_back(DroppedWorker{worker, rank, since.count(), why});
  core_.onWorkerLost(worker, replies);
  // Tell the worker: other shards may still count it live, and it would wait for this
  // shard's reply forever. It stops; its departure ends it on the others. A dead worker
  // cannot be told, and need not be; a stalled one would not listen, so its connection
  // is closed instead, which it and the other shards see as this shard's death.
  if (stalled) {
    endpoint_.drop(rank, why);
    return;
  }
  MessageHeader bye;
  bye.kind = MessageKind::kShutdown;
  (void)sendTo(worker, bye, {});
}

void Server::sendReplies(std::vector<Reply>& replies) {
  // Sending can drop a worker, and dropping can release more replies (sync, staleness).
  for (size_t i = 0; i < replies.size(); ++i) {
    MessageHeader header;
    header.kind = MessageKind::kReply;
    header.model_version = replies[i].version;
    header.learning_rate = replies[i].lr;
    const int worker = replies[i].worker;
    auto s = sendTo(worker, header, replies[i].segments);
    core_.recycle(std::move(replies[i]));
    if (!s.ok()) drop(worker, absl::StrCat("cannot send the reply: ", s.message()), &replies);
  }
  replies.clear();
}

absl::Status Server::handle(int worker, std::vector<Reply>* replies) {
  auto header = decodeHeader(frame_.header);
  if (!header.ok()) return header.status();
  if (header->sender_rank != static_cast<uint32_t>(frame_.src)) {
    return absl::InvalidArgumentError(
        absl::StrCat("message claims sender rank ", header->sender_rank));
  }
  float largest = 0;
  if (auto s = decodePayload(*header, frame_.payload, limits_, &in_, &largest); !s.ok()) return s;
  stats_.bytes_in += frame_.header.size() + frame_.payload.size();
  ++stats_.messages_in;

  const auto buffers_id = static_cast<uint32_t>(specs_.size());
  switch (header->kind) {
    case MessageKind::kPush:
      for (const auto& s : in_) {
        if (s.segment_id == buffers_id) return absl::InvalidArgumentError("push carries BN buffers");
      }
      if (auto s = core_.acceptPush(worker, header->worker_step, largest); !s.ok()) return s;
      notePush(worker);
      core_.onPush(worker, in_, replies);
      return absl::OkStatus();
    case MessageKind::kModel:
      if (header->flags & kFlagPull) return sendModel(worker);
      if (header->flags & kFlagBuffers) {
        for (auto& s : in_) {
          if (s.segment_id == buffers_id) core_.onBuffers(worker, s);
        }
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError("model message without pull or buffers flag");
    case MessageKind::kShutdown:
      stopListening(frame_.src);
      core_.onWorkerDone(worker, replies);
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected ", messageKindName(header->kind), " message"));
  }
}

Deadline Server::roundDeadline() {
  if (core_.waitingOn().empty()) {
    waiting_since_.reset();
    return kNoDeadline;
  }
  if (!waiting_since_) waiting_since_ = std::chrono::steady_clock::now();
  return *waiting_since_ + job_.peer_timeout;
}

void Server::dropStallers(std::vector<Reply>* replies) {
  const double seconds = std::chrono::duration<double>(job_.peer_timeout).count();
  for (int worker : core_.waitingOn()) {
    drop(worker,
         absl::StrCat("held a ", nameOf(kConsistencyModeNames, job_.server.mode),
                      " round for ", seconds, " s without pushing"),
         replies, /*stalled=*/true);
  }
  waiting_since_.reset();
}

void Server::notePush(int worker) {
  const auto now = std::chrono::steady_clock::now();
  interval_[worker] = now - last_push_[worker];
  last_push_[worker] = now;
}

std::chrono::steady_clock::duration Server::pushBound() {
  scratch_.clear();
  for (const auto& interval : interval_) {
    if (interval.count() > 0) scratch_.push_back(interval);
  }
  std::chrono::steady_clock::duration bound = kIdlePeerTimeouts * job_.peer_timeout;
  if (!scratch_.empty()) {
    const auto middle = scratch_.begin() + static_cast<ptrdiff_t>(scratch_.size() / 2);
    std::nth_element(scratch_.begin(), middle, scratch_.end());
    bound = std::max(bound, kIdleSteps * *middle);
  }
  return bound;
}

Deadline Server::pushDeadline() {
  Deadline first = kNoDeadline;
  for (int rank : live_ranks_) {
    const int w = workerOf(rank);
    if (!core_.awaitsReply(w)) first = std::min(first, last_push_[w]);
  }
  return first == kNoDeadline ? first : first + pushBound();
}

void Server::dropIdle(std::vector<Reply>* replies) {
  const auto now = std::chrono::steady_clock::now();
  const auto bound = pushBound();
  auto seconds = [](std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  for (int rank : std::vector<int>(live_ranks_)) {
    const int w = workerOf(rank);
    if (core_.awaitsReply(w) || now - last_push_[w] < bound) continue;
    drop(w,
         absl::StrFormat("made no push for %.1f s (the bound: %d peer timeouts, or %d of the "
                         "workers' median step if longer: %.1f s)",
                         seconds(now - last_push_[w]), kIdlePeerTimeouts, kIdleSteps,
                         seconds(bound)),
         replies, /*stalled=*/true);
  }
}

absl::Status Server::maybeCheckpoint(bool final) {
  if (checkpoint_path_.empty()) return absl::OkStatus();
  const bool due = job_.checkpoint_every > 0 &&
                   core_.version() >= last_checkpoint_version_ + job_.checkpoint_every;
  if (!final && !due) return absl::OkStatus();
  last_checkpoint_version_ = core_.version();
  return saveCheckpoint(checkpoint_path_, core_.checkpoint(layout_fingerprint_));
}

absl::Status Server::run() {
  started_ = std::chrono::steady_clock::now();
  last_push_.assign(worker_ranks_.size(), started_);
  interval_.assign(worker_ranks_.size(), std::chrono::steady_clock::duration::zero());
  std::vector<Reply> replies;
  for (size_t w = 0; w < worker_ranks_.size(); ++w) {
    if (auto s = sendModel(static_cast<int>(w)); !s.ok()) {
      drop(static_cast<int>(w), absl::StrCat("cannot send the initial model: ", s.message()), &replies);
    } else {
      core_.onWorkerStart(static_cast<int>(w));
    }
  }
  while (!live_ranks_.empty()) {
    sendReplies(replies);
    const Deadline round = roundDeadline();
    if (auto s = endpoint_.receive(live_ranks_, &frame_, std::min(round, pushDeadline()));
        !s.ok()) {
      if (!absl::IsDeadlineExceeded(s)) return s;
      if (std::chrono::steady_clock::now() >= round) dropStallers(&replies);
      dropIdle(&replies);
      continue;
    }
    const int worker = workerOf(frame_.src);
    if (!frame_.peer_status.ok()) {
      drop(worker, std::string(frame_.peer_status.message()), &replies);
    } else if (auto s = handle(worker, &replies); !s.ok()) {
      drop(worker, absl::StrCat("bad message: ", s.message()), &replies);
    }
    if (auto s = maybeCheckpoint(false); !s.ok()) return s;
  }
  sendReplies(replies);
  stats_.pushes = core_.pushes();
  stats_.epochs = core_.epoch();
  return maybeCheckpoint(true);
}

}  // namespace sparseps

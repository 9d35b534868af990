#include "core/runtime/shard_session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/runtime/protocol.h"

namespace sparseps {

Outgoing& Outbox::add(int worker) {
  if (size_ == entries_.size()) entries_.emplace_back();
  Outgoing& o = entries_[size_++];
  o.worker = worker;
  o.status = absl::OkStatus();
  o.cut.clear();
  return o;
}

absl::StatusOr<ShardSession> ShardSession::make(ShardCore& core, const JobSpec& job, int shard,
                                                const Shard& range) {
  auto limits = shardLimits(range, core.numBuffers());
  if (!limits.ok()) return limits.status();
  // A push is used before the driver reuses its bytes (a sync round keeps a copy, which
  // owns its values), so its dense segments may borrow the payload.
  limits->borrowDense(core.readsBorrowedDense());
  return ShardSession(core, job, shard, range, std::move(*limits));
}

ShardSession::ShardSession(ShardCore& core, const JobSpec& job, int shard, const Shard& range,
                           DecodeLimits limits)
    : core_(&core),
      job_(&job),
      shard_(shard),
      specs_(range.local_specs),
      buffers_id_(buffersSegmentId(range)),
      limits_(std::move(limits)),
      timers_(job),
      listening_(static_cast<size_t>(job.num_workers), true),
      pushes_(static_cast<size_t>(job.num_workers), 0) {}

void ShardSession::encode(int worker, const MessageHeader& header, const Message& segments,
                          Outbox* out) {
  Outgoing& o = out->add(worker);
  MessageHeader h = header;
  h.sender_rank = static_cast<uint32_t>(shard_);
  h.shard = static_cast<uint32_t>(shard_);
  o.status = encodeMessage(h, segments, job_->encode, &o.bytes);
  if (!o.status.ok()) o.bytes.clear();
}

void ShardSession::model(int worker, float lr, Outbox* out) {
  Message segments = denseMessage(specs_, core_->model());
  if (core_->numBuffers() > 0) {
    segments.emplace_back();
    denseSegment(core_->averagedBuffers(), buffers_id_, &segments.back());
  }
  MessageHeader header;
  header.kind = MessageKind::kModel;
  header.model_version = core_->version();
  header.worker_step = core_->workerSteps(worker);  // where this worker resumes in its data
  header.learning_rate = lr;
  encode(worker, header, segments, out);
}

void ShardSession::start(int worker, Outbox* out) {
  model(worker, job_->start_lr > 0 ? static_cast<float>(job_->start_lr) : core_->lr(), out);
  core_->onWorkerStart(worker);
}

void ShardSession::encodeReplies(Outbox* out) {
  for (Reply& r : replies_) {
    MessageHeader header;
    header.kind = MessageKind::kReply;
    header.model_version = r.version;
    header.learning_rate = r.lr;
    encode(r.worker, header, r.segments, out);
    core_->recycle(std::move(r));
  }
  replies_.clear();
}

absl::StatusOr<Received> ShardSession::handle(int worker, absl::Span<const uint8_t> header_bytes,
                                              absl::Span<const uint8_t> payload, Outbox* out) {
  auto header = decodeHeader(header_bytes);
  if (!header.ok()) return header.status();
  if (header->sender_rank != static_cast<uint32_t>(workerRank(worker))) {
    return absl::InvalidArgumentError(absl::StrCat("message claims sender rank ",
                                                   header->sender_rank));
  }
  float largest = 0;
  double squares = 0;
  if (auto s = decodePayload(*header, payload, limits_, &in_, &largest, &squares); !s.ok()) {
    return s;
  }
  switch (header->kind) {
    case MessageKind::kPush:
      for (const auto& s : in_) {
        if (s.segment_id == buffers_id_) {
          return absl::InvalidArgumentError("push carries BN buffers");
        }
      }
      if (auto s = core_->acceptPush(worker, header->worker_step, largest, squares, in_);
          !s.ok()) {
        return s;
      }
      core_->onPush(worker, in_, &replies_);
      encodeReplies(out);
      return Received::kPush;
    case MessageKind::kModel:
      if (header->flags & kFlagPull) {
        model(worker, core_->lr(), out);
        return Received::kPull;
      }
      if (header->flags & kFlagBuffers) {
        for (auto& s : in_) {
          if (s.segment_id == buffers_id_) core_->onBuffers(worker, s);
        }
        return Received::kBuffers;
      }
      return absl::InvalidArgumentError("model message without pull or buffers flag");
    case MessageKind::kShutdown:
      core_->onWorkerDone(worker, &replies_);
      encodeReplies(out);
      return Received::kGoodbye;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected ", messageKindName(header->kind), " message"));
  }
}

absl::StatusOr<Received> ShardSession::receive(int worker, absl::Span<const uint8_t> header,
                                               absl::Span<const uint8_t> payload, ShardTime now,
                                               Outbox* out) {
  absl::StatusOr<Received> received = handle(worker, header, payload, out);
  if (!received.ok()) {
    drop(worker, absl::StrCat("bad message: ", received.status().message()), now, out);
  } else if (*received == Received::kPush) {
    ++pushes_[worker];
    timers_.pushed(worker, now);
  } else if (*received == Received::kGoodbye) {
    listening_[worker] = false;
  }
  timers_.round(!core_->waitingOn().empty(), now);
  return received;
}

void ShardSession::peerFailed(int worker, const std::string& why, ShardTime now, Outbox* out) {
  drop(worker, why, now, out);
  timers_.round(!core_->waitingOn().empty(), now);
}

void ShardSession::sent(int worker, ShardTime now) { timers_.served(worker, now); }

void ShardSession::sendFailed(int worker, const std::string& why, ShardTime now, Outbox* out) {
  drop(worker, absl::StrCat("cannot send to it: ", why), now, out);
  timers_.round(!core_->waitingOn().empty(), now);
}

std::vector<ClippedWorker> ShardSession::clipped() const {
  std::vector<ClippedWorker> out;
  const std::vector<uint64_t>& pushes = core_->clippedPushes();
  for (size_t w = 0; w < pushes.size(); ++w) {
    const int worker = static_cast<int>(w);
    if (pushes[w] > 0) out.push_back({worker, workerRank(worker), pushes[w]});
  }
  return out;
}

bool ShardSession::anyListening() const {
  return std::find(listening_.begin(), listening_.end(), true) != listening_.end();
}

ShardTime ShardSession::nextTimeout() const {
  ShardTime next = std::min(timers_.nextStart(), timers_.roundDeadline());
  for (int w = 0; w < timers_.started(); ++w) {
    if (listening_[w] && !core_->awaitsReply(w)) {
      next = std::min(next, timers_.servedAt(w) + timers_.idleBound(w));
    }
  }
  return next;
}

void ShardSession::handleTimeout(ShardTime now, Outbox* out) {
  while (timers_.nextStart() <= now) {
    const int w = timers_.started();
    timers_.markStarted(now);
    start(w, out);
  }
  if (now >= timers_.roundDeadline()) {
    const double seconds = std::chrono::duration<double>(job_->peer_timeout).count();
    for (int w : std::vector<int>(core_->waitingOn())) {
      drop(w,
           absl::StrCat("held a ", nameOf(kConsistencyModeNames, job_->server.mode),
                        " round for ", seconds, " s without pushing"),
           now, out, /*stalled=*/true);
    }
  }
  auto seconds = [](ShardTime t) { return std::chrono::duration<double>(t).count(); };
  for (int w = 0; w < timers_.started(); ++w) {
    const ShardTime idle = now - timers_.servedAt(w);
    const ShardTime bound = timers_.idleBound(w);
    if (!listening_[w] || core_->awaitsReply(w) || idle < bound) continue;
    drop(w,
         absl::StrFormat("made no push for %.1f s after it was served (the bound: %d peer "
                         "timeouts, or %d of its longest step or of the workers' median "
                         "step if longer: %.1f s)",
                         seconds(idle), ShardTimers::kIdlePeerTimeouts, ShardTimers::kIdleSteps,
                         seconds(bound)),
         now, out, /*stalled=*/true);
  }
  timers_.round(!core_->waitingOn().empty(), now);
}

void ShardSession::drop(int worker, const std::string& why, ShardTime now, Outbox* out,
                        bool stalled) {
  if (!listening_[worker]) return;
  listening_[worker] = false;
  const int rank = workerRank(worker);
  job_->server.log(absl::StrCat("server: dropping worker ", worker, " (rank ", rank, "): ", why));
  dropped_.push_back(DroppedWorker{worker, rank, std::chrono::duration<double>(now).count(),
                                   pushes_[worker], why});
  core_->onWorkerLost(worker, &replies_);
  encodeReplies(out);
  // Tell the worker: other shards may still count it live, and it would wait for this
  // shard's reply forever. It stops; its departure ends it on the others. A dead worker
  // cannot be told, and need not be; a stalled one would not listen, so its connection
  // is cut instead.
  if (stalled) {
    out->add(worker).cut = why;
    return;
  }
  goodbye(worker, out);
}

void ShardSession::goodbye(int worker, Outbox* out) {
  MessageHeader bye;
  bye.kind = MessageKind::kShutdown;
  encode(worker, bye, {}, out);
}

}  // namespace sparseps

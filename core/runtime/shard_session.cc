#include "core/runtime/shard_session.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/runtime/protocol.h"

namespace sparseps {

Outgoing& Outbox::add(int worker) {
  if (size_ == entries_.size()) entries_.emplace_back();
  Outgoing& o = entries_[size_++];
  o.worker = worker;
  o.status = absl::OkStatus();
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
      limits_(std::move(limits)) {}

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

absl::StatusOr<Received> ShardSession::receive(int worker, absl::Span<const uint8_t> header_bytes,
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

void ShardSession::lose(int worker, Outbox* out) {
  core_->onWorkerLost(worker, &replies_);
  encodeReplies(out);
}

void ShardSession::goodbye(int worker, Outbox* out) {
  MessageHeader bye;
  bye.kind = MessageKind::kShutdown;
  encode(worker, bye, {}, out);
}

}  // namespace sparseps

#include "core/runtime/worker_session.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/apply.h"
#include "core/runtime/protocol.h"

namespace sparseps {

absl::StatusOr<WorkerSession> WorkerSession::make(const JobSpec& job, int rank, ShardPlan plan,
                                                  std::unique_ptr<WorkerRule> rule,
                                                  size_t num_buffers) {
  std::vector<DecodeLimits> limits;
  for (int s = 0; s < plan.numShards(); ++s) {
    auto shard = shardLimits(plan.shard(s), s == 0 ? num_buffers : 0);
    if (!shard.ok()) return shard.status();
    shard->borrowDense(rule->readsBorrowedDense());
    limits.push_back(std::move(*shard));
  }
  return WorkerSession(job, rank, std::move(plan), std::move(rule), num_buffers, std::move(limits));
}

WorkerSession::WorkerSession(const JobSpec& job, int rank, ShardPlan plan,
                             std::unique_ptr<WorkerRule> rule, size_t num_buffers,
                             std::vector<DecodeLimits> limits)
    : rank_(rank),
      encode_(job.encode),
      plan_(std::move(plan)),
      rule_(std::move(rule)),
      num_buffers_(num_buffers),
      limits_(std::move(limits)),
      to_shard_(plan_.numShards()),
      from_shard_(plan_.numShards()) {}

absl::Status WorkerSession::encode(int shard, MessageHeader header, const Message& segments,
                                   std::vector<uint8_t>* out) const {
  header.sender_rank = static_cast<uint32_t>(rank_);
  header.shard = static_cast<uint32_t>(shard);
  return encodeMessage(header, segments, encode_, out);
}

absl::Status WorkerSession::push(absl::Span<const float> grad, absl::Span<const float> w,
                                 int epoch, std::vector<std::vector<uint8_t>>* out) {
  rule_->makePush(grad, w, StepContext{lr_, epoch, step_}, &push_);
  splitByShard(plan_, &push_, &to_shard_);
  MessageHeader header;
  header.kind = MessageKind::kPush;
  header.worker_step = step_;
  header.model_version = last_version_;
  header.learning_rate = lr_;
  out->resize(plan_.numShards());
  absl::Status encoded = absl::OkStatus();
  for (int s = 0; s < plan_.numShards() && encoded.ok(); ++s) {
    encoded = encode(s, header, to_shard_[s], &(*out)[s]);
  }
  mergeBack(plan_, &to_shard_, &push_);
  return encoded;
}

absl::Status WorkerSession::buffers(absl::Span<const float> buffers, std::vector<uint8_t>* out) {
  MessageHeader header;
  header.kind = MessageKind::kModel;
  header.flags = kFlagBuffers;
  Message message(1);
  denseSegment(buffers, buffersSegmentId(plan_.shard(0)), &message[0]);
  return encode(0, header, message, out);
}

absl::Status WorkerSession::pull(int shard, std::vector<uint8_t>* out) {
  MessageHeader header;
  header.kind = MessageKind::kModel;
  header.flags = kFlagPull;
  return encode(shard, header, {}, out);
}

absl::Status WorkerSession::goodbye(int shard, std::vector<uint8_t>* out) {
  MessageHeader header;
  header.kind = MessageKind::kShutdown;
  return encode(shard, header, {}, out);
}

absl::Status WorkerSession::receive(int shard, absl::Span<const uint8_t> header_bytes,
                                    absl::Span<const uint8_t> payload, MessageKind expected) {
  auto header = decodeHeader(header_bytes);
  if (!header.ok()) {
    return absl::DataLossError(
        absl::StrCat("bad message from server shard ", shard, ": ", header.status().message()));
  }
  if (header->kind == MessageKind::kShutdown) {
    return absl::AbortedError(absl::StrCat("server shard ", shard, " (rank ", shardRank(shard),
                                           ") dropped this worker; its log says why"));
  }
  if (header->kind != expected) {
    return absl::InternalError(absl::StrCat("server shard ", shard, " sent ",
                                            messageKindName(header->kind), ", expected ",
                                            messageKindName(expected)));
  }
  DecodedMessage& decoded = from_shard_[shard];
  if (auto s = decodePayload(*header, payload, limits_[shard], &decoded.segments); !s.ok()) {
    return absl::DataLossError(
        absl::StrCat("bad message from server shard ", shard, ": ", s.message()));
  }
  decoded.header = *header;
  return absl::OkStatus();
}

ServerProgress WorkerSession::takeModel(absl::Span<float> w, absl::Span<float> buffers,
                                        bool adopt) {
  for (int s = 0; s < plan_.numShards(); ++s) {
    const Shard& shard = plan_.shard(s);
    for (const auto& seg : from_shard_[s].segments) {
      if (s == 0 && seg.segment_id == buffersSegmentId(shard)) {
        copyDense(seg, buffers.first(seg.numel));
      }
    }
    copyDenseInto(from_shard_[s].segments, shard.local_specs, w.subspan(shard.offset, shard.numel));
  }
  const MessageHeader& h = from_shard_[0].header;
  if (adopt) {
    lr_ = h.learning_rate;
    last_version_ = h.model_version;
    step_ = h.worker_step;
  }
  return ServerProgress{h.model_version, h.worker_step, h.learning_rate};
}

uint64_t WorkerSession::applyReplies(absl::Span<float> w) {
  // Each shard's reply in global ids, applied shard by shard.
  for (int s = 0; s < plan_.numShards(); ++s) {
    toGlobalIds(plan_, s, &from_shard_[s].segments);
    rule_->applyReply(from_shard_[s].segments, w);
  }
  const MessageHeader& h = from_shard_[0].header;
  const uint64_t staleness =
      h.model_version > last_version_ + 1 ? h.model_version - last_version_ - 1 : 0;
  last_version_ = h.model_version;
  lr_ = h.learning_rate;
  ++step_;
  return staleness;
}

}  // namespace sparseps

#include "core/runtime/worker_client.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compressors/apply.h"
#include "core/runtime/protocol.h"

namespace sparseps {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

WorkerClient::WorkerClient(Endpoint& endpoint, const JobSpec& job, ShardPlan plan,
                           SegmentSpecs specs, std::unique_ptr<WorkerRule> rule, size_t num_buffers)
    : endpoint_(endpoint),
      plan_(std::move(plan)),
      specs_(std::move(specs)),
      rule_(std::move(rule)),
      server_ranks_(job.serverRanks()),
      encode_(job.encode),
      num_buffers_(num_buffers),
      to_shard_(plan_.numShards()),
      shard_frames_(plan_.numShards()),
      from_shard_(plan_.numShards()) {
  for (int s = 0; s < plan_.numShards(); ++s) {
    DecodeLimits limits;
    const auto& local = plan_.shard(s).local_specs;
    for (const auto& spec : local) limits.allow(spec.id, static_cast<uint32_t>(spec.numel));
    if (s == 0 && num_buffers_ > 0) {
      limits.allow(static_cast<uint32_t>(local.size()), static_cast<uint32_t>(num_buffers_));
    }
    limits.borrowDense(rule_->readsBorrowedDense());
    limits_.push_back(std::move(limits));
  }
}

absl::Status WorkerClient::sendToShard(int shard, MessageHeader header, const Message& segments,
                                       uint64_t* bytes) {
  header.sender_rank = static_cast<uint32_t>(endpoint_.rank());
  header.shard = static_cast<uint32_t>(shard);
  if (auto s = encodeMessage(header, segments, encode_, &out_); !s.ok()) return s;
  const int rank = server_ranks_[shard];
  if (auto s = endpoint_.send(rank, out_); !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach server shard ", shard, " (rank ", rank, "): ", s.message()));
  }
  if (bytes) *bytes += out_.size();
  return absl::OkStatus();
}

absl::Status WorkerClient::receiveFromAllShards(MessageKind expected, uint64_t* bytes) {
  std::vector<int> waiting = server_ranks_;
  while (!waiting.empty()) {
    if (auto s = endpoint_.receive(waiting, &frame_); !s.ok()) return s;
    const int shard = static_cast<int>(
        std::find(server_ranks_.begin(), server_ranks_.end(), frame_.src) - server_ranks_.begin());
    // The shard's decoded segments borrow its frame's payload, so each shard keeps its own
    // frame until its next message; the frame it held takes the next receive.
    std::swap(frame_, shard_frames_[shard]);
    const Frame& frame = shard_frames_[shard];
    if (!frame.peer_status.ok()) {
      return absl::UnavailableError(absl::StrCat("server shard ", shard, " (rank ", frame.src,
                                                 ") failed: ", frame.peer_status.message()));
    }
    auto header = decodeHeader(frame.header);
    if (!header.ok()) return header.status();
    if (header->kind == MessageKind::kShutdown) {
      return absl::AbortedError(absl::StrCat("server shard ", shard, " (rank ", frame.src,
                                             ") dropped this worker; its log says why"));
    }
    if (header->kind != expected) {
      return absl::InternalError(absl::StrCat("server shard ", shard, " sent ",
                                              messageKindName(header->kind), ", expected ",
                                              messageKindName(expected)));
    }
    DecodedMessage& decoded = from_shard_[shard];
    if (auto s = decodePayload(*header, frame.payload, limits_[shard], &decoded.segments); !s.ok()) {
      return absl::DataLossError(
          absl::StrCat("bad message from server shard ", shard, ": ", s.message()));
    }
    decoded.header = *header;
    if (bytes) *bytes += frame.header.size() + frame.payload.size();
    waiting.erase(std::remove(waiting.begin(), waiting.end(), frame.src), waiting.end());
  }
  return absl::OkStatus();
}

absl::StatusOr<ServerProgress> WorkerClient::receiveModel(absl::Span<float> w,
                                                          absl::Span<float> buffers) {
  if (auto s = receiveFromAllShards(MessageKind::kModel, nullptr); !s.ok()) return s;
  for (int s = 0; s < plan_.numShards(); ++s) {
    const Shard& shard = plan_.shard(s);
    for (const auto& seg : from_shard_[s].segments) {
      if (seg.segment_id == shard.num_segments) {
        copyDense(seg, buffers.first(seg.numel));
      }
    }
    copyDenseInto(from_shard_[s].segments, shard.local_specs, w.subspan(shard.offset, shard.numel));
  }
  const MessageHeader& h = from_shard_[0].header;
  lr_ = h.learning_rate;
  last_version_ = h.model_version;
  return ServerProgress{h.model_version, h.worker_step, h.learning_rate};
}

absl::StatusOr<ServerProgress> WorkerClient::start(absl::Span<float> w, absl::Span<float> buffers) {
  auto progress = receiveModel(w, buffers);
  if (progress.ok()) step_ = progress->worker_steps;
  return progress;
}

absl::Status WorkerClient::step(absl::Span<const float> grad, absl::Span<float> w, int epoch,
                                StepStats* stats) {
  auto t0 = std::chrono::steady_clock::now();
  rule_->makePush(grad, w, StepContext{lr_, epoch, step_}, &push_);
  splitByShard(plan_, &push_, &to_shard_);
  stats->compress_seconds = secondsSince(t0);

  auto t1 = std::chrono::steady_clock::now();
  MessageHeader header;
  header.kind = MessageKind::kPush;
  header.worker_step = step_;
  header.model_version = last_version_;
  header.learning_rate = lr_;
  absl::Status sent = absl::OkStatus();
  for (int s = 0; s < plan_.numShards() && sent.ok(); ++s) {
    sent = sendToShard(s, header, to_shard_[s], &stats->bytes_up);
  }
  mergeBack(plan_, &to_shard_, &push_);
  if (!sent.ok()) return sent;
  if (auto s = receiveFromAllShards(MessageKind::kReply, &stats->bytes_down); !s.ok()) return s;
  stats->communicate_seconds = secondsSince(t1);

  // Each shard's reply in global ids, applied shard by shard.
  for (int s = 0; s < plan_.numShards(); ++s) {
    toGlobalIds(plan_, s, &from_shard_[s].segments);
    rule_->applyReply(from_shard_[s].segments, w);
  }

  const MessageHeader& h = from_shard_[0].header;
  stats->staleness = h.model_version > last_version_ + 1 ? h.model_version - last_version_ - 1 : 0;
  last_version_ = h.model_version;
  lr_ = h.learning_rate;
  ++step_;
  return absl::OkStatus();
}

absl::Status WorkerClient::sendBuffers(absl::Span<const float> buffers) {
  if (num_buffers_ == 0) return absl::OkStatus();
  MessageHeader header;
  header.kind = MessageKind::kModel;
  header.flags = kFlagBuffers;
  const auto id = static_cast<uint32_t>(plan_.shard(0).num_segments);
  Message message(1);
  denseSegment(buffers, id, &message[0]);
  return sendToShard(0, header, message, nullptr);
}

absl::StatusOr<ServerProgress> WorkerClient::pullModel(absl::Span<float> w,
                                                       absl::Span<float> buffers) {
  MessageHeader header;
  header.kind = MessageKind::kModel;
  header.flags = kFlagPull;
  for (int s = 0; s < plan_.numShards(); ++s) {
    if (auto st = sendToShard(s, header, {}, nullptr); !st.ok()) return st;
  }
  // A pull must not disturb the worker's own learning rate or version bookkeeping.
  const float lr = lr_;
  const uint64_t version = last_version_;
  auto state = receiveModel(w, buffers);
  lr_ = lr;
  last_version_ = version;
  return state;
}

absl::Status WorkerClient::finish() {
  MessageHeader header;
  header.kind = MessageKind::kShutdown;
  for (int s = 0; s < plan_.numShards(); ++s) {
    if (auto st = sendToShard(s, header, {}, nullptr); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace sparseps

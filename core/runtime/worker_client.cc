#include "core/runtime/worker_client.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

WorkerClient::WorkerClient(Endpoint& endpoint, WorkerSession session)
    : endpoint_(endpoint),
      session_(std::move(session)),
      shard_frames_(session_.numShards()),
      out_(session_.numShards()) {}

absl::Status WorkerClient::sendToShard(int shard, absl::Span<const uint8_t> message,
                                       uint64_t* bytes) {
  const int rank = session_.shardRank(shard);
  if (auto s = endpoint_.send(rank, message); !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach server shard ", shard, " (rank ", rank, "): ", s.message()));
  }
  if (bytes) *bytes += message.size();
  return absl::OkStatus();
}

absl::Status WorkerClient::sendToShards(uint64_t* bytes) {
  for (int s = 0; s < session_.numShards(); ++s) {
    if (auto st = sendToShard(s, out_[s], bytes); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status WorkerClient::receiveFromAllShards(MessageKind expected, uint64_t* bytes) {
  std::vector<int> waiting;
  for (int s = 0; s < session_.numShards(); ++s) waiting.push_back(session_.shardRank(s));
  while (!waiting.empty()) {
    if (auto s = endpoint_.receive(waiting, &frame_); !s.ok()) return s;
    int shard = 0;
    while (session_.shardRank(shard) != frame_.src) ++shard;
    // The shard's decoded segments borrow its frame's payload, so each shard keeps its own
    // frame until its next message; the frame it held takes the next receive.
    std::swap(frame_, shard_frames_[shard]);
    const Frame& frame = shard_frames_[shard];
    if (!frame.peer_status.ok()) {
      return absl::UnavailableError(absl::StrCat("server shard ", shard, " (rank ", frame.src,
                                                 ") failed: ", frame.peer_status.message()));
    }
    if (auto s = session_.receive(shard, frame.header, frame.payload, expected); !s.ok()) return s;
    if (bytes) *bytes += frame.header.size() + frame.payload.size();
    waiting.erase(std::remove(waiting.begin(), waiting.end(), frame.src), waiting.end());
  }
  return absl::OkStatus();
}

absl::StatusOr<ServerProgress> WorkerClient::start(absl::Span<float> w, absl::Span<float> buffers) {
  if (auto s = receiveFromAllShards(MessageKind::kModel, nullptr); !s.ok()) return s;
  return session_.takeModel(w, buffers, /*adopt=*/true);
}

absl::Status WorkerClient::step(absl::Span<const float> grad, absl::Span<float> w, int epoch,
                                StepStats* stats) {
  auto t0 = std::chrono::steady_clock::now();
  if (auto s = session_.push(grad, w, epoch, &out_); !s.ok()) return s;
  stats->compress_seconds = secondsSince(t0);

  auto t1 = std::chrono::steady_clock::now();
  if (auto s = sendToShards(&stats->bytes_up); !s.ok()) return s;
  if (auto s = receiveFromAllShards(MessageKind::kReply, &stats->bytes_down); !s.ok()) return s;
  stats->communicate_seconds = secondsSince(t1);
  stats->staleness = session_.applyReplies(w);
  return absl::OkStatus();
}

absl::Status WorkerClient::sendBuffers(absl::Span<const float> buffers) {
  if (session_.numBuffers() == 0) return absl::OkStatus();
  if (auto s = session_.buffers(buffers, &out_[0]); !s.ok()) return s;
  return sendToShard(0, out_[0], nullptr);
}

absl::StatusOr<ServerProgress> WorkerClient::pullModel(absl::Span<float> w,
                                                       absl::Span<float> buffers) {
  for (int s = 0; s < session_.numShards(); ++s) {
    if (auto st = session_.pull(s, &out_[s]); !st.ok()) return st;
  }
  if (auto s = sendToShards(nullptr); !s.ok()) return s;
  if (auto s = receiveFromAllShards(MessageKind::kModel, nullptr); !s.ok()) return s;
  return session_.takeModel(w, buffers, /*adopt=*/false);
}

absl::Status WorkerClient::finish() {
  for (int s = 0; s < session_.numShards(); ++s) {
    if (auto st = session_.goodbye(s, &out_[s]); !st.ok()) return st;
    // A shard that has shut down in order needs no goodbye. That is also what a goodbye
    // that reached it reads as when it closed at once after it (this was its last worker):
    // its close aborts the send's wait (Endpoint::send's FailedPrecondition).
    const absl::Status sent = endpoint_.send(session_.shardRank(s), out_[s]);
    if (!sent.ok() && !absl::IsFailedPrecondition(sent)) {
      return absl::UnavailableError(absl::StrCat("cannot say goodbye to server shard ", s,
                                                 " (rank ", session_.shardRank(s), "): ",
                                                 sent.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace sparseps

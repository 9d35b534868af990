#include "transport/channel.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sparseps {
namespace {

// Gloo slots (tags) of the channel's message kinds.
constexpr uint64_t kHeaderSlot = 0x53500001;
constexpr uint64_t kPayloadSlot = 0x53500002;
constexpr uint64_t kControlSlot = 0x53500003;
constexpr uint64_t kExchangeSlot = 0x53500004;
constexpr uint64_t kAckSlot = 0x53500005;

// Transport frame before the protocol header: the shaping stamp (CLOCK_MONOTONIC ns when
// the last byte left the sender's uplink plus its latency; 0 when the sender is unshaped).
constexpr size_t kFrameBytes = sizeof(int64_t);

// A watcher waits for its peer's bye for the whole job.
constexpr std::chrono::milliseconds kWatchTimeout = std::chrono::hours(24 * 30);
// Byes go to peers that may be gone; a timeout here only breaks a context that is closing.
constexpr std::chrono::milliseconds kByeTimeout = std::chrono::seconds(10);

std::string rankList(absl::Span<const int> ranks) {
  return absl::StrCat("{", absl::StrJoin(ranks, ","), "}");
}

}  // namespace

absl::Status ChannelOptions::validate() const {
  if (header_bytes == 0) return absl::InvalidArgumentError("channel: header_bytes must be > 0");
  if (!payload_size) return absl::InvalidArgumentError("channel: payload_size is not set");
  if (timeout.count() <= 0) return absl::InvalidArgumentError("channel: timeout must be positive");
  if (shaping && (shaping->up.bits_per_second < 0 || shaping->down.bits_per_second < 0 ||
                  shaping->up.latency_ns < 0 || shaping->down.latency_ns < 0)) {
    return absl::InvalidArgumentError("channel: shaping bandwidth and latency must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Channel>> Channel::create(std::shared_ptr<gloo::Context> context,
                                                         ChannelOptions options) {
  if (context == nullptr) return absl::InvalidArgumentError("channel: context is null");
  if (absl::Status s = options.validate(); !s.ok()) return s;
  std::unique_ptr<Channel> channel(new Channel(std::move(context), std::move(options)));
  for (int peer = 0; peer < channel->worldSize(); ++peer) {
    if (peer == channel->rank()) continue;
    channel->peers_[peer].watcher = std::thread(&Channel::watch, channel.get(), peer);
  }
  return channel;
}

Channel::Channel(std::shared_ptr<gloo::Context> context, ChannelOptions options)
    : context_(std::move(context)),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : std::make_shared<SteadyClock>()),
      peers_(context_->size),
      send_frame_(kFrameBytes + options_.header_bytes),
      recv_frame_(kFrameBytes + options_.header_bytes) {
  if (options_.shaping) {
    up_.emplace(options_.shaping->up);
    down_.emplace(options_.shaping->down);
  }
  recv_header_ = context_->createUnboundBuffer(recv_frame_.data(), recv_frame_.size());
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer == context_->rank) continue;
    peers_[peer].control = context_->createUnboundBuffer(&peers_[peer].control_word,
                                                         sizeof(peers_[peer].control_word));
    // Posted before any peer can say bye, so a bye never waits on us.
    peers_[peer].control->recv(peer, kControlSlot);
  }
}

Channel::~Channel() {
  shutdown();
  stopping_ = true;
  for (int peer = 0; peer < worldSize(); ++peer) {
    if (peer == rank()) continue;
    peers_[peer].control->abortWaitRecv();
    if (peers_[peer].watcher.joinable()) peers_[peer].watcher.join();
  }
  // The watchers' and the header receive's buffers die with us; close the pairs first so
  // no late message lands in them.
  try {
    context_->closeConnections();
  } catch (const std::exception&) {
    // Closing a broken context: nothing left to save.
  }
}

int Channel::rank() const { return context_->rank; }
int Channel::worldSize() const { return context_->size; }

void Channel::watch(int peer) {
  Peer& p = peers_[peer];
  bool said_bye = false;
  for (;;) {
    try {
      // Stays posted after the bye: the peer's closing connection then fails this receive
      // and wakes a bye we may be sending it (Gloo fails no pending send when a
      // connection closes).
      if (said_bye) p.control->recv(peer, kControlSlot);
      if (!p.control->waitRecv(nullptr, kWatchTimeout)) return;  // aborted: we are stopping
    } catch (const std::exception& e) {
      // The connection closed: a death unless the peer said bye first.
      if (!said_bye && !stopping_) markDead(peer, e.what());
      std::lock_guard<std::mutex> lock(mu_);
      p.gone = true;
      if (p.bye) p.bye->abortWaitSend();
      if (p.bye_ack) p.bye_ack->abortWaitRecv();
      if (payload_src_ == peer) payload_recv_->abortWaitRecv();
      return;
    }
    if (said_bye) continue;  // a peer says bye once; nothing else comes on this slot
    said_bye = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (p.state == PeerState::kLive) {
        p.bye_messages = p.control_word;
        p.state = p.counters.messages_received >= p.bye_messages ? PeerState::kClosed
                                                                 : PeerState::kClosing;
      }
    }
    recv_header_->abortWaitRecv();
    try {
      p.ack = context_->createUnboundBuffer(&p.ack_word, sizeof(p.ack_word));
      p.ack->send(peer, kAckSlot);
      p.ack->waitSend(nullptr, kByeTimeout);
    } catch (const std::exception&) {
      // The peer closed without waiting for the ack: it has what it needs.
    }
  }
}

void Channel::markDead(int peer, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Peer& p = peers_[peer];
    if (p.state == PeerState::kDead || p.state == PeerState::kClosed) return;
    p.state = PeerState::kDead;
    p.reason = reason;
  }
  recv_header_->abortWaitRecv();
}

bool Channel::isLive(int peer) const {
  if (peer < 0 || peer >= worldSize() || peer == rank()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  const PeerState s = peers_[peer].state;
  return s == PeerState::kLive || s == PeerState::kClosing;
}

LinkCounters Channel::counters(int peer) const {
  std::lock_guard<std::mutex> lock(mu_);
  return peers_.at(peer).counters;
}

LinkCounters Channel::totalCounters() const {
  std::lock_guard<std::mutex> lock(mu_);
  LinkCounters total;
  for (const Peer& p : peers_) {
    total.bytes_sent += p.counters.bytes_sent;
    total.messages_sent += p.counters.messages_sent;
    total.bytes_received += p.counters.bytes_received;
    total.messages_received += p.counters.messages_received;
  }
  return total;
}

absl::Status Channel::send(int dst, absl::Span<const uint8_t> message) {
  if (dst < 0 || dst >= worldSize() || dst == rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("channel: rank ", rank(), " cannot send to rank ", dst));
  }
  if (message.size() < options_.header_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("channel: a message of ", message.size(),
                                                   " bytes is shorter than the ",
                                                   options_.header_bytes, "-byte header"));
  }
  const absl::Span<const uint8_t> header = message.subspan(0, options_.header_bytes);
  const absl::Span<const uint8_t> payload = message.subspan(options_.header_bytes);
  absl::StatusOr<size_t> announced = options_.payload_size(header);
  if (!announced.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("channel: send to rank ", dst,
                                                   ": bad header: ", announced.status().message()));
  }
  if (*announced != payload.size() || payload.size() > options_.max_payload_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "channel: send to rank ", dst, ": header announces ", *announced, " bytes, payload has ",
        payload.size(), ", limit ", options_.max_payload_bytes));
  }
  std::lock_guard<std::mutex> send_lock(send_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Peer& p = peers_[dst];
    if (shut_down_) return absl::FailedPreconditionError("channel: shut down");
    if (p.state == PeerState::kDead) {
      return absl::UnavailableError(absl::StrCat("channel: rank ", dst, " is dead: ", p.reason));
    }
    if (p.state != PeerState::kLive) {
      return absl::FailedPreconditionError(absl::StrCat("channel: rank ", dst, " has shut down"));
    }
  }
  const size_t bytes = header.size() + payload.size();
  int64_t stamp = 0;
  if (up_) stamp = up_->reserve(clock_->nowNanos(), 0, bytes) + up_->spec().latency_ns;
  std::memcpy(send_frame_.data(), &stamp, kFrameBytes);
  std::memcpy(send_frame_.data() + kFrameBytes, header.data(), header.size());
  try {
    auto frame = context_->createUnboundBuffer(send_frame_.data(), send_frame_.size());
    std::unique_ptr<gloo::transport::UnboundBuffer> body;
    frame->send(dst, kHeaderSlot);
    if (!payload.empty()) {
      // Gloo only reads from a send buffer.
      body = context_->createUnboundBuffer(const_cast<uint8_t*>(payload.data()), payload.size());
      body->send(dst, kPayloadSlot);
    }
    frame->waitSend(nullptr, options_.timeout);
    if (body) body->waitSend(nullptr, options_.timeout);
  } catch (const std::exception& e) {
    markDead(dst, e.what());
    return absl::UnavailableError(
        absl::StrCat("channel: send to rank ", dst, " failed: ", e.what()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  peers_[dst].counters.bytes_sent += bytes;
  peers_[dst].counters.messages_sent += 1;
  return absl::OkStatus();
}

std::optional<int> Channel::unreportedEvent(absl::Span<const int> ranks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int r : ranks) {
    if (r < 0 || r >= worldSize() || r == rank()) continue;
    const Peer& p = peers_[r];
    if (!p.reported && (p.state == PeerState::kDead || p.state == PeerState::kClosed)) return r;
  }
  return std::nullopt;
}

void Channel::reportEvent(int peer, Frame* frame) {
  std::lock_guard<std::mutex> lock(mu_);
  Peer& p = peers_[peer];
  p.reported = true;
  frame->src = peer;
  frame->header.clear();
  frame->payload.clear();
  frame->peer_status =
      p.state == PeerState::kDead
          ? absl::UnavailableError(absl::StrCat("channel: rank ", peer, " is dead: ", p.reason))
          : absl::UnavailableError(absl::StrCat("channel: rank ", peer, " closed its connection"));
}

absl::StatusOr<Frame> Channel::receive(absl::Span<const int> ranks) {
  Frame frame;
  if (absl::Status s = receive(ranks, &frame); !s.ok()) return s;
  return frame;
}

absl::Status Channel::receive(absl::Span<const int> ranks, Frame* frame) {
  for (;;) {
    if (std::optional<int> peer = unreportedEvent(ranks)) {
      reportEvent(*peer, frame);
      return absl::OkStatus();
    }
    std::vector<int> live;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (interrupted_) {
        interrupted_ = false;
        return absl::CancelledError("channel: receive interrupted");
      }
      if (shut_down_) return absl::FailedPreconditionError("channel: shut down");
      for (int r : ranks) {
        if (r < 0 || r >= worldSize() || r == rank()) {
          return absl::InvalidArgumentError(
              absl::StrCat("channel: rank ", rank(), " cannot receive from rank ", r));
        }
        const PeerState s = peers_[r].state;
        if (s == PeerState::kLive || s == PeerState::kClosing) live.push_back(r);
      }
      std::sort(live.begin(), live.end());
      live.erase(std::unique(live.begin(), live.end()), live.end());
      if (live.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("channel: no live peer among ranks ", rankList(ranks)));
      }
      if (!posted_ranks_.empty()) {
        // A header receive is still posted (an earlier wait was woken early). It must serve
        // this call: the live ranks asked for must be exactly its live ranks.
        std::vector<int> posted_live;
        for (int r : posted_ranks_) {
          const PeerState s = peers_[r].state;
          if (s == PeerState::kLive || s == PeerState::kClosing) posted_live.push_back(r);
        }
        if (posted_live != live) {
          return absl::FailedPreconditionError(
              absl::StrCat("channel: a receive from ranks ", rankList(posted_ranks_),
                           " is still posted; cannot receive from ", rankList(live), " instead"));
        }
      }
    }
    int src = -1;
    try {
      if (posted_ranks_.empty()) {
        recv_header_->recv(live, kHeaderSlot);
        posted_ranks_ = live;
      }
      if (!recv_header_->waitRecv(&src, options_.timeout)) continue;  // woken: look again
    } catch (const std::exception& e) {
      // A pair failed under the receive from any rank: its watcher marks that peer dead.
      posted_ranks_.clear();
      if (std::optional<int> peer = unreportedEvent(ranks)) {
        reportEvent(*peer, frame);
        return absl::OkStatus();
      }
      return absl::UnavailableError(
          absl::StrCat("channel: receive from ranks ", rankList(live), " failed: ", e.what()));
    }
    posted_ranks_.clear();
    receivePosted(src, frame);
    return absl::OkStatus();
  }
}

void Channel::receivePosted(int src, Frame* frame) {
  frame->src = src;
  frame->peer_status = absl::OkStatus();
  int64_t stamp = 0;
  std::memcpy(&stamp, recv_frame_.data(), kFrameBytes);
  frame->header.assign(recv_frame_.begin() + kFrameBytes, recv_frame_.end());
  auto refuse = [&](std::string why) {
    markDead(src, why);
    std::lock_guard<std::mutex> lock(mu_);
    peers_[src].reported = true;
    frame->peer_status = absl::InvalidArgumentError(
        absl::StrCat("channel: rank ", src, " ", why, "; rank ", src, " is dropped"));
  };
  absl::StatusOr<size_t> announced = options_.payload_size(frame->header);
  if (!announced.ok()) {
    return refuse(absl::StrCat("sent a bad header: ", announced.status().message()));
  }
  if (*announced > options_.max_payload_bytes) {
    return refuse(absl::StrCat("announced a payload of ", *announced,
                               " bytes, more than the limit of ", options_.max_payload_bytes));
  }
  frame->payload.resize(*announced);
  if (!frame->payload.empty()) {
    auto body = context_->createUnboundBuffer(frame->payload.data(), frame->payload.size());
    std::string failure;
    try {
      body->recv(src, kPayloadSlot);
      bool gone;
      {
        // The watcher aborts this wait if src's connection closes (Gloo would not wake a
        // receive posted after the close was seen).
        std::lock_guard<std::mutex> lock(mu_);
        gone = peers_[src].gone;
        payload_recv_ = body.get();
        payload_src_ = src;
      }
      if (gone || !body->waitRecv(nullptr, options_.timeout)) failure = "connection closed";
    } catch (const std::exception& e) {
      failure = e.what();
    }
    std::lock_guard<std::mutex> lock(mu_);
    payload_recv_ = nullptr;
    payload_src_ = -1;
    if (!failure.empty()) {
      Peer& p = peers_[src];
      if (p.state != PeerState::kDead) {
        p.state = PeerState::kDead;
        p.reason = failure;
      }
      p.reported = true;
      frame->peer_status = absl::UnavailableError(
          absl::StrCat("channel: rank ", src, " is dead (payload receive failed): ", failure));
      return;
    }
  }
  const size_t bytes = frame->header.size() + frame->payload.size();
  if (down_) {
    const int64_t now = clock_->nowNanos();
    // An unshaped sender's message starts on our downlink when it arrives.
    const int64_t finish =
        stamp == 0 ? down_->reserve(now, 0, bytes) : down_->reserve(0, stamp, bytes);
    clock_->sleepUntilNanos(finish + down_->spec().latency_ns);
  }
  std::lock_guard<std::mutex> lock(mu_);
  Peer& p = peers_[src];
  p.counters.bytes_received += bytes;
  p.counters.messages_received += 1;
  if (p.state == PeerState::kClosing && p.counters.messages_received >= p.bye_messages) {
    p.state = PeerState::kClosed;
  }
}

absl::StatusOr<std::vector<std::vector<uint8_t>>> Channel::exchange(
    absl::Span<const int> peers, absl::Span<const uint8_t> mine) {
  std::vector<std::vector<uint8_t>> theirs(peers.size(), std::vector<uint8_t>(mine.size()));
  std::vector<uint8_t> copy(mine.begin(), mine.end());
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> recvs, sends;
  size_t i = 0;
  try {
    for (i = 0; i < peers.size(); ++i) {
      if (peers[i] < 0 || peers[i] >= worldSize() || peers[i] == rank()) {
        return absl::InvalidArgumentError(
            absl::StrCat("channel: rank ", rank(), " cannot exchange with rank ", peers[i]));
      }
      recvs.push_back(context_->createUnboundBuffer(theirs[i].data(), theirs[i].size()));
      recvs.back()->recv(peers[i], kExchangeSlot);
      sends.push_back(context_->createUnboundBuffer(copy.data(), copy.size()));
      sends.back()->send(peers[i], kExchangeSlot);
    }
    for (i = 0; i < peers.size(); ++i) {
      sends[i]->waitSend(nullptr, options_.timeout);
      recvs[i]->waitRecv(nullptr, options_.timeout);
    }
  } catch (const std::exception& e) {
    const int peer = i < peers.size() ? peers[i] : -1;
    if (peer >= 0) markDead(peer, e.what());
    return absl::UnavailableError(
        absl::StrCat("channel: exchange with rank ", peer, " failed: ", e.what()));
  }
  return theirs;
}

void Channel::interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
  }
  recv_header_->abortWaitRecv();
}

void Channel::shutdown() {
  {
    std::lock_guard<std::mutex> send_lock(send_mu_);
    std::vector<int> tell;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shut_down_) return;
      shut_down_ = true;
      for (int peer = 0; peer < worldSize(); ++peer) {
        Peer& p = peers_[peer];
        // A peer that said bye is closing too: it needs no bye from us (our watcher has
        // acked its bye), and its stopped watcher would never ack ours.
        if (peer == rank() || p.state != PeerState::kLive || p.gone) continue;
        // The bye says how many data messages preceded it, so the peer reports our
        // shutdown only after it has taken all of them.
        p.bye_word = p.counters.messages_sent;
        p.bye = context_->createUnboundBuffer(&p.bye_word, sizeof(p.bye_word));
        p.bye_ack = context_->createUnboundBuffer(&p.bye_ack_word, sizeof(p.bye_ack_word));
        tell.push_back(peer);
      }
    }
    // Wait for each ack: the peer then has read everything we sent before the bye.
    // Both waits are woken by the watcher when the peer's connection closes.
    try {
      for (int peer : tell) {
        peers_[peer].bye_ack->recv(peer, kAckSlot);
        peers_[peer].bye->send(peer, kControlSlot);
      }
    } catch (const std::exception&) {
      // The context broke: nobody is left to tell.
    }
    for (int peer : tell) {
      try {
        peers_[peer].bye->waitSend(nullptr, kByeTimeout);
        peers_[peer].bye_ack->waitRecv(nullptr, kByeTimeout);
      } catch (const std::exception&) {
        // This peer is gone already.
      }
    }
  }
  // Wake a receive in progress; the watchers keep acking byes until we are destroyed.
  recv_header_->abortWaitRecv();
}

}  // namespace sparseps

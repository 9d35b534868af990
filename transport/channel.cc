#include "transport/channel.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "transport/channel_wire.h"

namespace sparseps {
namespace {

using namespace channel_wire;  // NOLINT: the slots and control words are this file's vocabulary

// Gloo's own wait limit, never reached: the channel's deadlines abort a stalled wait first
// (a Gloo timeout would break every pair of the context).
constexpr std::chrono::milliseconds kWatchTimeout = std::chrono::hours(24 * 30);

// Byes go to peers that may be gone; a timeout here only breaks a context that is closing.
constexpr std::chrono::milliseconds kByeTimeout = std::chrono::seconds(10);

// How long a receive whose pair failed waits for the watcher to name the dead peer.
constexpr std::chrono::milliseconds kDeathNoticeWait = std::chrono::seconds(1);

std::string rankList(absl::Span<const int> ranks) {
  return absl::StrCat("{", absl::StrJoin(ranks, ","), "}");
}

}  // namespace

absl::Status ChannelOptions::validate() const {
  if (header_bytes == 0) return absl::InvalidArgumentError("channel: header_bytes must be > 0");
  if (!payload_size) return absl::InvalidArgumentError("channel: payload_size is not set");
  if (peer_timeout.count() <= 0) {
    return absl::InvalidArgumentError("channel: peer_timeout must be positive");
  }
  if (shaping && (shaping->up.bits_per_second < 0 || shaping->down.bits_per_second < 0 ||
                  shaping->up.latency_ns < 0 || shaping->down.latency_ns < 0)) {
    return absl::InvalidArgumentError("channel: shaping bandwidth and latency must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Channel>> Channel::create(
    std::shared_ptr<gloo::Context> context, ChannelOptions options,
    const std::map<int, std::string>& missing) {
  if (context == nullptr) return absl::InvalidArgumentError("channel: context is null");
  if (absl::Status s = options.validate(); !s.ok()) return s;
  std::unique_ptr<Channel> channel(new Channel(std::move(context), std::move(options), missing));
  for (int peer = 0; peer < channel->worldSize(); ++peer) {
    if (!channel->connected(peer)) continue;
    channel->peers_[peer].watcher = std::thread(&Channel::watch, channel.get(), peer);
    channel->peers_[peer].pulser = std::thread(&Channel::pulse, channel.get(), peer);
  }
  channel->monitor_ = std::thread(&Channel::monitor, channel.get());
  return channel;
}

Channel::Channel(std::shared_ptr<gloo::Context> context, ChannelOptions options,
                 const std::map<int, std::string>& missing)
    : context_(std::move(context)),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : std::make_shared<SteadyClock>()),
      peers_(context_->size),
      liveness_(context_->size, options_.peer_timeout, options_.max_payload_bytes,
                std::chrono::steady_clock::now()),
      send_frame_(headerMessageBytes(options_.header_bytes)),
      recv_frame_(headerMessageBytes(options_.header_bytes)),
      canary_rng_(std::random_device{}()) {
  if (options_.shaping) {
    up_.emplace(options_.shaping->up);
    down_.emplace(options_.shaping->down);
  }
  recv_header_ = context_->createUnboundBuffer(recv_frame_.data(), recv_frame_.size());
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer == context_->rank) continue;
    if (!connected(peer)) {
      auto it = missing.find(peer);
      peers_[peer].state = PeerState::kDead;
      peers_[peer].gone = true;
      peers_[peer].reason =
          absl::StrCat("is missing: ", it != missing.end() ? it->second : "it has no connection");
      continue;
    }
    peers_[peer].pulse = context_->createUnboundBuffer(&peers_[peer].pulse_word,
                                                       sizeof(peers_[peer].pulse_word));
    peers_[peer].control = context_->createUnboundBuffer(&peers_[peer].control_word,
                                                         sizeof(peers_[peer].control_word));
    // Posted before any peer can say bye, so a bye never waits on us.
    peers_[peer].control->recv(peer, kControlSlot);
  }
}

Channel::~Channel() {
  shutdown();
  stopping_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_threads_ = true;
  }
  monitor_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  for (int peer = 0; peer < worldSize(); ++peer) {
    if (!connected(peer)) continue;
    peers_[peer].pulse->abortWaitSend();
    if (peers_[peer].pulser.joinable()) peers_[peer].pulser.join();
    peers_[peer].control->abortWaitRecv();
    if (peers_[peer].watcher.joinable()) peers_[peer].watcher.join();
  }
  for (auto& a : set_aside_) {
    a->buffer->abortWaitRecv();
    if (a->waiter.joinable()) a->waiter.join();
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

bool Channel::connected(int peer) const {
  return peer != rank() && context_->getPair(peer) != nullptr;
}

void Channel::watch(int peer) {
  Peer& p = peers_[peer];
  bool said_bye = false;
  bool post = false;  // the constructor posted the first receive
  for (;;) {
    try {
      // Stays posted after the bye: the peer's closing connection then fails this receive
      // and wakes a bye we may be sending it (Gloo fails no pending send when a
      // connection closes).
      if (post) p.control->recv(peer, kControlSlot);
      post = true;
      if (!p.control->waitRecv(nullptr, kWatchTimeout)) return;  // aborted: stopping, dropped
    } catch (const std::exception& e) {
      // The connection closed: a death unless the peer said bye first.
      if (!said_bye && !stopping_) markDead(peer, e.what());
      std::lock_guard<std::mutex> lock(mu_);
      p.gone = true;
      abortWaitsOn(peer);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (notePulse(peer, p.control_word)) continue;
    }
    if (said_bye) continue;  // a peer says bye once
    said_bye = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (p.state == PeerState::kLive) {
        p.bye_messages = p.control_word;
        p.state = p.counters.messages_received >= p.bye_messages ? PeerState::kClosed
                                                                 : PeerState::kClosing;
      }
    }
    wakeReceive();
    try {
      p.ack = context_->createUnboundBuffer(&p.ack_word, sizeof(p.ack_word));
      p.ack->send(peer, kAckSlot);
      p.ack->waitSend(nullptr, kByeTimeout);
    } catch (const std::exception&) {
      // The peer closed without waiting for the ack: it has what it needs.
    }
  }
}

bool Channel::notePulse(int peer, uint64_t word) {
  const Time now = std::chrono::steady_clock::now();
  if ((word & kPulseBit) == 0) {
    liveness_.heard(peer, now);
    return false;
  }
  liveness_.pulsed(peer, word & kProgressMask, (word & kBusyBit) != 0, now);
  return true;
}

void Channel::pulse(int peer) {
  Peer& p = peers_[peer];
  const auto every = std::max(options_.peer_timeout / 5, std::chrono::milliseconds(1));
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    monitor_cv_.wait_for(lock, every, [&] { return stop_threads_ || p.gone; });
    if (stop_threads_ || p.gone || p.state == PeerState::kDead) return;
    // A send of ours to this peer waits on the peer: it is not work the peer may count on.
    // Two ranks sending to each other (a goodbye to a worker that is pushing) then see each
    // other idle and the send is cut by the stall rule instead of both waiting forever.
    const int others = busy_ - (p.sending[0] != nullptr ? 1 : 0);
    p.pulse_word = kPulseBit | (others > 0 ? kBusyBit : 0) | (progress_ & kProgressMask);
    lock.unlock();
    try {
      p.pulse->send(peer, kControlSlot);
      if (!p.pulse->waitSend(nullptr, kWatchTimeout)) return;  // aborted: stopping, dropped
    } catch (const std::exception&) {
      return;  // the connection closed; the watcher reports it
    }
    lock.lock();
  }
}

std::chrono::milliseconds Channel::monitorPeriod() const {
  return std::max(options_.peer_timeout / 10, std::chrono::milliseconds(1));
}

void Channel::monitor() {
  const auto every = monitorPeriod();
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<PeerLiveness::Watch> watch(worldSize());
  while (!stop_threads_) {
    monitor_cv_.wait_until(lock, std::min(receive_until_, std::chrono::steady_clock::now() + every));
    if (stop_threads_) return;
    const Time now = std::chrono::steady_clock::now();
    if (now >= receive_until_ && !deadline_passed_) {
      deadline_passed_ = true;
      wakeReceive();
    }
    for (int peer = 0; peer < worldSize(); ++peer) {
      const Peer& p = peers_[peer];
      watch[peer] = peer == rank() || p.gone ? PeerLiveness::Watch::kNone
                    : p.state == PeerState::kDead || p.state == PeerState::kClosed
                        ? PeerLiveness::Watch::kHandshake
                        : PeerLiveness::Watch::kAll;
    }
    const std::vector<PeerLiveness::Stall> stalled = liveness_.look(now, watch);
    lock.unlock();
    for (const PeerLiveness::Stall& s : stalled) cut(s.peer, s.why, /*reported=*/false);
    lock.lock();
  }
}

void Channel::abortWaitsOn(int peer) {
  Peer& p = peers_[peer];
  for (auto* buffer : p.sending) {
    if (buffer != nullptr) buffer->abortWaitSend();
  }
  if (p.bye) p.bye->abortWaitSend();
  if (p.bye_ack) p.bye_ack->abortWaitRecv();
  if (payload_src_ == peer) payload_recv_->abortWaitRecv();
  if (p.exchange_send) p.exchange_send->abortWaitSend();
  if (p.exchange_recv) p.exchange_recv->abortWaitRecv();
  if (p.pulse) p.pulse->abortWaitSend();
}

void Channel::drop(int peer, const std::string& why) { cut(peer, why, /*reported=*/true); }

void Channel::cut(int peer, const std::string& why, bool reported) {
  if (peer < 0 || peer >= worldSize() || peer == rank()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Peer& p = peers_[peer];
    if (p.gone) return;
    p.gone = true;
    if (p.state != PeerState::kDead) {
      p.state = PeerState::kDead;
      p.reason = absl::StrCat("is dropped: it ", why);
    }
    p.reported = p.reported || reported;
    abortWaitsOn(peer);
    p.control->abortWaitRecv();
  }
  monitor_cv_.notify_all();  // its pulser stops
  // No late byte of it lands in our buffers, and it sees us gone.
  context_->getPair(peer)->close();
  wakeReceive();
}

void Channel::markDead(int peer, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Peer& p = peers_[peer];
    if (p.state == PeerState::kDead || p.state == PeerState::kClosed) return;
    p.state = PeerState::kDead;
    p.reason = absl::StrCat("is dead: ", reason);
  }
  wakeReceive();
}

bool Channel::isLive(int peer) const {
  if (peer < 0 || peer >= worldSize() || peer == rank()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return sending(peers_[peer].state);
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
  auto frame = context_->createUnboundBuffer(send_frame_.data(), send_frame_.size());
  std::unique_ptr<gloo::transport::UnboundBuffer> body;
  if (!payload.empty()) {
    // Gloo only reads from a send buffer.
    body = context_->createUnboundBuffer(const_cast<uint8_t*>(payload.data()), payload.size());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    Peer& p = peers_[dst];
    if (shut_down_) return absl::FailedPreconditionError("channel: shut down");
    if (p.state == PeerState::kDead) {
      return absl::UnavailableError(absl::StrCat("channel: rank ", dst, " ", p.reason));
    }
    if (p.state != PeerState::kLive) {
      return absl::FailedPreconditionError(absl::StrCat("channel: rank ", dst, " has shut down"));
    }
    // Registered with the check, so a death or stall seen from now on aborts these waits
    // (the watcher, the monitor).
    p.sending[0] = frame.get();
    p.sending[1] = body.get();
    liveness_.sendWaiting(dst, std::chrono::steady_clock::now());
  }
  const size_t bytes = header.size() + payload.size();
  int64_t stamp = 0;
  if (up_) {
    stamp = up_->reserve(clock_->nowNanos(), 0, bytes,
                         handshakeNanos(*options_.shaping, !payload.empty())) +
            up_->spec().latency_ns;
  }
  writeHeaderMessage(send_frame_.data(), stamp, header, payload);
  ++busy_;
  std::string failure;
  try {
    frame->send(dst, kHeaderSlot);
    if (body) body->send(dst, kPayloadSlot);
    if (!frame->waitSend(nullptr, kWatchTimeout) ||
        (body && !body->waitSend(nullptr, kWatchTimeout))) {
      failure = "aborted";
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  --busy_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Peer& p = peers_[dst];
    p.sending[0] = p.sending[1] = nullptr;
    liveness_.sendDone(dst);
    if (failure.empty()) {
      ++progress_;
      p.counters.bytes_sent += bytes;
      p.counters.messages_sent += 1;
      return absl::OkStatus();
    }
  }
  markDead(dst, failure);  // a drop already said why; a receive reports the death
  std::lock_guard<std::mutex> lock(mu_);
  const Peer& p = peers_[dst];
  return absl::UnavailableError(absl::StrCat("channel: send to rank ", dst, " failed: rank ", dst,
                                             " ", p.state == PeerState::kDead ? p.reason
                                                                              : "has shut down"));
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
          ? absl::UnavailableError(absl::StrCat("channel: rank ", peer, " ", p.reason))
          : absl::UnavailableError(absl::StrCat("channel: rank ", peer, " closed its connection"));
}

absl::StatusOr<Frame> Channel::receive(absl::Span<const int> ranks) {
  Frame frame;
  if (absl::Status s = receive(ranks, &frame); !s.ok()) return s;
  return frame;
}

absl::Status Channel::receive(absl::Span<const int> ranks, Frame* frame, Deadline until) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    receive_until_ = until;
    deadline_passed_ = false;
  }
  // Only a deadline before the monitor's next look needs it woken: a receive without one,
  // or with a far one (a server's progress bound, on every message of a steady loop),
  // wakes no thread.
  if (until < std::chrono::steady_clock::now() + monitorPeriod()) monitor_cv_.notify_all();
  absl::Status status = receiveUntil(ranks, frame);
  std::lock_guard<std::mutex> lock(mu_);
  receive_until_ = kNoDeadline;
  return status;
}

absl::Status Channel::receiveUntil(absl::Span<const int> ranks, Frame* frame) {
  for (;;) {
    if (std::optional<int> peer = unreportedEvent(ranks)) {
      reportEvent(*peer, frame);
      return absl::OkStatus();
    }
    if (takeSetAsideHeader(frame)) return absl::OkStatus();
    std::vector<int> live;
    bool set_aside = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (interrupted_) {
        interrupted_ = false;
        return absl::CancelledError("channel: receive interrupted");
      }
      if (deadline_passed_) return absl::DeadlineExceededError("channel: nothing came in time");
      if (shut_down_) return absl::FailedPreconditionError("channel: shut down");
      for (int r : ranks) {
        if (r < 0 || r >= worldSize() || r == rank()) {
          return absl::InvalidArgumentError(
              absl::StrCat("channel: rank ", rank(), " cannot receive from rank ", r));
        }
        if (sending(peers_[r].state)) live.push_back(r);
      }
      std::sort(live.begin(), live.end());
      live.erase(std::unique(live.begin(), live.end()), live.end());
      if (live.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("channel: no live peer among ranks ", rankList(ranks)));
      }
      if (!posted_ranks_.empty()) {
        // A header receive is still posted (an earlier wait was woken early). It must serve
        // this call: the live ranks asked for must be exactly its live ranks. One posted on
        // a rank that left since is set aside (setAsideHeader says why).
        std::vector<int> posted_live;
        for (int r : posted_ranks_) {
          if (sending(peers_[r].state)) posted_live.push_back(r);
        }
        if (posted_live.size() != posted_ranks_.size()) {
          posted_ranks_.clear();
          set_aside = true;
        } else if (posted_live != live) {
          return absl::FailedPreconditionError(
              absl::StrCat("channel: a receive from ranks ", rankList(posted_ranks_),
                           " is still posted; cannot receive from ", rankList(live), " instead"));
        }
      }
    }
    if (set_aside) setAsideHeader();
    int src = -1;
    try {
      if (posted_ranks_.empty()) {
        recv_header_->recv(live, kHeaderSlot);
        posted_ranks_ = live;
      }
      if (!recv_header_->waitRecv(&src, kWatchTimeout)) continue;  // woken: look again
    } catch (const std::exception& e) {
      // A pair failed under the receive from any rank: its watcher marks that peer dead,
      // perhaps a moment later (peers that died while this process was stopped are all
      // seen at once when it runs again).
      const std::vector<int> was_posted = std::exchange(posted_ranks_, {});
      renewHeaderBuffer();
      const auto until = std::chrono::steady_clock::now() + kDeathNoticeWait;
      bool explained = false;
      do {
        if (std::optional<int> peer = unreportedEvent(ranks)) {
          reportEvent(*peer, frame);
          return absl::OkStatus();
        }
        // A death reported before this wait (the watcher saw it first, or a wait woken
        // early left the receive posted on that peer) explains it: receive afresh.
        explained = anyGone(was_posted);
        if (!explained) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      } while (!explained && std::chrono::steady_clock::now() < until);
      if (explained) continue;
      return absl::UnavailableError(
          absl::StrCat("channel: receive from ranks ", rankList(live), " failed: ", e.what()));
    }
    posted_ranks_.clear();
    receivePosted(src, recv_frame_, frame);
    return absl::OkStatus();
  }
}

bool Channel::anyGone(absl::Span<const int> ranks) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(ranks.begin(), ranks.end(),
                     [this](int r) { return !sending(peers_[r].state); });
}

void Channel::wakeReceive() {
  std::lock_guard<std::mutex> lock(header_mu_);
  recv_header_->abortWaitRecv();
}

void Channel::renewHeaderBuffer() {
  // Gloo keeps a failed pair's error in every buffer posted on it (each later wait would
  // rethrow it, whichever ranks it listens to): a fresh buffer takes the next receive.
  auto fresh = context_->createUnboundBuffer(recv_frame_.data(), recv_frame_.size());
  std::lock_guard<std::mutex> lock(header_mu_);
  given_up_headers_.push_back(std::exchange(recv_header_, std::move(fresh)));
}

void Channel::setAsideHeader() {
  auto a = std::make_unique<SetAside>();
  std::vector<uint8_t> fresh(recv_frame_.size());
  a->bytes.swap(recv_frame_);  // the vector's memory, where Gloo may still write, moves along
  recv_frame_.swap(fresh);
  auto buffer = context_->createUnboundBuffer(recv_frame_.data(), recv_frame_.size());
  {
    std::lock_guard<std::mutex> lock(header_mu_);
    a->buffer = std::exchange(recv_header_, std::move(buffer));
  }
  SetAside* raw = a.get();
  a->waiter = std::thread([this, raw] {
    int src = -1;
    try {
      // A wake meant for the receive it was (wakeReceive) may still be pending on it.
      while (!raw->buffer->waitRecv(&src, kWatchTimeout)) {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_threads_) return;
      }
    } catch (const std::exception&) {
      return;  // taken by a pair that failed
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      raw->src = src;
    }
    wakeReceive();
  });
  set_aside_.push_back(std::move(a));
}

bool Channel::takeSetAsideHeader(Frame* frame) {
  SetAside* done = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& a : set_aside_) {
      if (a->src >= 0 && !a->taken) {
        a->taken = true;
        done = a.get();
        break;
      }
    }
  }
  if (done == nullptr) return false;
  done->waiter.join();
  receivePosted(done->src, done->bytes, frame);
  return true;
}

void Channel::receivePosted(int src, absl::Span<const uint8_t> message, Frame* frame) {
  frame->src = src;
  frame->peer_status = absl::OkStatus();
  int64_t stamp = 0;
  std::memcpy(&stamp, message.data(), kFrameBytes);
  const auto header_end = message.end() - kTailBytes;
  frame->header.assign(message.begin() + kFrameBytes, header_end);
  uint8_t tail[kTailBytes];
  std::copy(header_end, message.end(), tail);
  auto refuse = [&](std::string why) {
    cut(src, why, /*reported=*/true);
    frame->payload.clear();
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
  if (*announced > 0) {
    // Posted at the protocol's maximum: a peer that sends more than it announced (up to
    // that) is refused instead of making Gloo terminate this process. Gloo does not say how
    // many bytes came, so the payload's last bytes are set to differ from the tail its
    // header message carries (a payload that stops short leaves one of them so) and the
    // bytes after it to random ones (a longer one overwrites them).
    const size_t n = *announced;
    frame->payload.resize(options_.max_payload_bytes);
    const size_t t = std::min(kTailBytes, n);
    for (size_t i = 0; i < t; ++i) frame->payload[n - t + i] = static_cast<uint8_t>(~tail[i]);
    uint8_t canary[kTailBytes];
    const size_t c = std::min(kTailBytes, options_.max_payload_bytes - n);
    const uint64_t random = canary_rng_();
    std::memcpy(canary, &random, sizeof canary);
    std::copy(canary, canary + c, frame->payload.begin() + static_cast<ptrdiff_t>(n));
    auto body = context_->createUnboundBuffer(frame->payload.data(), frame->payload.size());
    std::string failure;
    ++busy_;
    try {
      body->recv(src, kPayloadSlot);
      bool gone;
      {
        // The watcher aborts this wait if src's connection closes (Gloo would not wake a
        // receive posted after the close was seen), the monitor if src stalls.
        std::lock_guard<std::mutex> lock(mu_);
        gone = peers_[src].gone;
        payload_recv_ = body.get();
        payload_src_ = src;
        liveness_.payloadAnnounced(src, n, std::chrono::steady_clock::now());
      }
      if (gone || !body->waitRecv(nullptr, kWatchTimeout)) failure = "connection closed";
    } catch (const std::exception& e) {
      failure = e.what();
    }
    --busy_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      payload_recv_ = nullptr;
      payload_src_ = -1;
      liveness_.payloadDone();
      if (!failure.empty()) {
        Peer& p = peers_[src];
        if (p.state != PeerState::kDead) {
          p.state = PeerState::kDead;
          p.reason = absl::StrCat("is dead (payload receive failed): ", failure);
        }
        p.reported = true;
        frame->payload.clear();
        frame->peer_status =
            absl::UnavailableError(absl::StrCat("channel: rank ", src, " ", p.reason));
        return;
      }
    }
    if (!std::equal(tail, tail + t, frame->payload.begin() + static_cast<ptrdiff_t>(n - t))) {
      return refuse(absl::StrCat("sent a payload shorter than the ", n,
                                 " bytes its header announced"));
    }
    if (!std::equal(canary, canary + c, frame->payload.begin() + static_cast<ptrdiff_t>(n))) {
      return refuse(absl::StrCat("sent a payload longer than the ", n,
                                 " bytes its header announced"));
    }
  }
  frame->payload.resize(*announced);
  const size_t bytes = frame->header.size() + frame->payload.size();
  if (down_) {
    const int64_t now = clock_->nowNanos();
    // An unshaped sender's message starts on our downlink when it arrives.
    const int64_t handshake = handshakeNanos(*options_.shaping, !frame->payload.empty());
    const int64_t finish = stamp == 0 ? down_->reserve(now, 0, bytes, handshake)
                                      : down_->reserve(0, stamp, bytes, handshake);
    ++busy_;
    clock_->sleepUntilNanos(finish + down_->spec().latency_ns);
    --busy_;
  }
  ++progress_;
  std::lock_guard<std::mutex> lock(mu_);
  Peer& p = peers_[src];
  liveness_.heard(src, std::chrono::steady_clock::now());
  p.counters.bytes_received += bytes;
  p.counters.messages_received += 1;
  if (p.state == PeerState::kClosing && p.counters.messages_received >= p.bye_messages) {
    p.state = PeerState::kClosed;
  }
}

absl::StatusOr<std::vector<absl::StatusOr<std::vector<uint8_t>>>> Channel::exchange(
    absl::Span<const int> peers, absl::Span<const uint8_t> mine,
    std::chrono::milliseconds bound) {
  for (int peer : peers) {
    if (peer < 0 || peer >= worldSize() || peer == rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("channel: rank ", rank(), " cannot exchange with rank ", peer));
    }
  }
  const size_t n = peers.size();
  std::vector<absl::StatusOr<std::vector<uint8_t>>> out(n);
  std::vector<std::vector<uint8_t>> theirs(n, std::vector<uint8_t>(mine.size()));
  std::vector<uint8_t> copy(mine.begin(), mine.end());
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> recvs(n), sends(n);
  auto unavailable = [&](int peer) {  // mu_ held
    const Peer& p = peers_[peer];
    return absl::UnavailableError(absl::StrCat(
        "channel: no exchange with rank ", peer, ": rank ", peer, " ",
        p.state == PeerState::kDead ? p.reason : "has shut down"));
  };
  // Every receive is posted before any wait, so peers exchanging with each other never
  // wait on one another; a peer that does not answer is cut by the monitor (its bound).
  std::vector<std::string> failure(n);
  for (size_t i = 0; i < n; ++i) {
    Peer& p = peers_[peers[i]];
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (p.state != PeerState::kLive || p.gone) {
        out[i] = unavailable(peers[i]);
        continue;
      }
      recvs[i] = context_->createUnboundBuffer(theirs[i].data(), theirs[i].size());
      sends[i] = context_->createUnboundBuffer(copy.data(), copy.size());
      p.exchange_send = sends[i].get();
      p.exchange_recv = recvs[i].get();
      liveness_.exchangeStarted(peers[i], std::chrono::steady_clock::now(), bound);
    }
    try {
      recvs[i]->recv(peers[i], kExchangeSlot);
      sends[i]->send(peers[i], kExchangeSlot);
    } catch (const std::exception& e) {
      failure[i] = e.what();  // the pair broke, which fails whatever was posted on it
    }
  }
  // Each peer is waited on by a thread of its own, which clears the peer's exchange as
  // soon as it completes: a mute peer earlier in the list must not keep a finished one
  // under the bound.
  auto await = [&](size_t i) {
    try {
      if (failure[i].empty() && (!sends[i]->waitSend(nullptr, kWatchTimeout) ||
                                 !recvs[i]->waitRecv(nullptr, kWatchTimeout))) {
        failure[i] = "aborted";
      }
    } catch (const std::exception& e) {
      failure[i] = e.what();
    }
    std::lock_guard<std::mutex> lock(mu_);
    Peer& p = peers_[peers[i]];
    p.exchange_send = p.exchange_recv = nullptr;
    liveness_.exchangeDone(peers[i], std::chrono::steady_clock::now());
  };
  std::vector<std::thread> waiters;
  for (size_t i = 0; i < n; ++i) {
    if (sends[i]) waiters.emplace_back(await, i);
  }
  for (std::thread& t : waiters) t.join();
  for (size_t i = 0; i < n; ++i) {
    if (!sends[i]) continue;
    if (failure[i].empty()) {
      out[i] = std::move(theirs[i]);
      continue;
    }
    markDead(peers[i], failure[i]);  // a cut already said why
    std::lock_guard<std::mutex> lock(mu_);
    out[i] = unavailable(peers[i]);
  }
  return out;
}

void Channel::interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
  }
  wakeReceive();
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
  wakeReceive();
}

}  // namespace sparseps

#include "transport/channel.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "transport/channel_wire.h"

namespace sparseps {
namespace {

using namespace channel_wire;  // NOLINT: the slots and control words are this file's vocabulary

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
      framing_(options_.header_bytes, options_.payload_size, options_.max_payload_bytes),
      clock_(options_.clock ? options_.clock : std::make_shared<SteadyClock>()),
      peers_(context_->size),
      liveness_(context_->size, options_.peer_timeout, options_.max_payload_bytes,
                std::chrono::steady_clock::now()),
      send_frame_(framing_.headerMessageBytes()),
      header_(context_.get(), framing_.headerMessageBytes()) {
  if (options_.shaping) nic_.emplace(*options_.shaping);
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
    peers_[peer].goodbye = std::make_unique<Goodbye>(context_.get(), peer);
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
  header_.stop();
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
      if (!p.control->waitRecv(nullptr, kNoGlooTimeout)) return;  // aborted: stopping, dropped
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
    header_.wake();
    p.goodbye->ackTheirs();
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
      if (!p.pulse->waitSend(nullptr, kNoGlooTimeout)) return;  // aborted: stopping, dropped
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
      header_.wake();
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
  if (p.goodbye) p.goodbye->abort();
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
  header_.wake();
}

void Channel::markDead(int peer, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Peer& p = peers_[peer];
    if (p.state == PeerState::kDead || p.state == PeerState::kClosed) return;
    p.state = PeerState::kDead;
    p.reason = absl::StrCat("is dead: ", reason);
  }
  header_.wake();
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
  for (const Peer& p : peers_) total += p.counters;
  return total;
}

absl::Status Channel::send(int dst, absl::Span<const uint8_t> message) {
  if (dst < 0 || dst >= worldSize() || dst == rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("channel: rank ", rank(), " cannot send to rank ", dst));
  }
  absl::StatusOr<Framing::Outgoing> out = framing_.split(dst, message);
  if (!out.ok()) return out.status();
  const absl::Span<const uint8_t> header = out->header;
  const absl::Span<const uint8_t> payload = out->payload;
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
  const int64_t stamp =
      nic_ ? nic_->stampSent(clock_->nowNanos(), bytes, !payload.empty()) : 0;
  writeHeaderMessage(send_frame_.data(), stamp, header, payload);
  ++busy_;
  std::string failure;
  try {
    frame->send(dst, kHeaderSlot);
    if (body) body->send(dst, kPayloadSlot);
    if (!frame->waitSend(nullptr, kNoGlooTimeout) ||
        (body && !body->waitSend(nullptr, kNoGlooTimeout))) {
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
      p.counters.sent(bytes);
      return absl::OkStatus();
    }
  }
  markDead(dst, failure);  // a drop already said why; a receive reports the death
  std::lock_guard<std::mutex> lock(mu_);
  const Peer& p = peers_[dst];
  // A peer that shut down in order while this send was out (its close aborts the wait, and
  // an abort hides whether the bytes had gone) is the same case as one shut down before it.
  if (p.state != PeerState::kDead) {
    return absl::FailedPreconditionError(
        absl::StrCat("channel: send to rank ", dst, " failed: rank ", dst, " has shut down"));
  }
  return absl::UnavailableError(
      absl::StrCat("channel: send to rank ", dst, " failed: rank ", dst, " ", p.reason));
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
    {
      int src = -1;
      absl::Span<const uint8_t> message;
      if (header_.takeSetAside(&src, &message)) {
        receivePosted(src, message, frame);
        return absl::OkStatus();
      }
    }
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
      if (!header_.postedOn().empty()) {
        // A header receive is still posted (an earlier wait was woken early). It must serve
        // this call: the live ranks asked for must be exactly its live ranks. One posted on
        // a rank that left since is set aside (setAsideHeader says why).
        std::vector<int> posted_live;
        for (int r : header_.postedOn()) {
          if (sending(peers_[r].state)) posted_live.push_back(r);
        }
        if (posted_live.size() != header_.postedOn().size()) {
          set_aside = true;
        } else if (posted_live != live) {
          return absl::FailedPreconditionError(
              absl::StrCat("channel: a receive from ranks ", rankList(header_.postedOn()),
                           " is still posted; cannot receive from ", rankList(live), " instead"));
        }
      }
    }
    if (set_aside) header_.setAside();
    int src = -1;
    try {
      if (!header_.wait(live, &src)) continue;  // woken: look again
    } catch (const std::exception& e) {
      // A pair failed under the receive from any rank: its watcher marks that peer dead,
      // perhaps a moment later (peers that died while this process was stopped are all
      // seen at once when it runs again).
      const std::vector<int> was_posted = header_.renew();
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
    receivePosted(src, header_.message(), frame);
    return absl::OkStatus();
  }
}

bool Channel::anyGone(absl::Span<const int> ranks) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(ranks.begin(), ranks.end(),
                     [this](int r) { return !sending(peers_[r].state); });
}

void Channel::receivePosted(int src, absl::Span<const uint8_t> message, Frame* frame) {
  frame->src = src;
  frame->peer_status = absl::OkStatus();
  const Framing::Incoming in = framing_.parse(message);
  frame->header.assign(in.header.begin(), in.header.end());
  auto refuse = [&](absl::string_view why) {
    cut(src, std::string(why), /*reported=*/true);
    frame->payload.clear();
    frame->peer_status = absl::InvalidArgumentError(
        absl::StrCat("channel: rank ", src, " ", why, "; rank ", src, " is dropped"));
  };
  absl::StatusOr<size_t> n = framing_.announced(frame->header);
  if (!n.ok()) return refuse(n.status().message());
  if (*n > 0) {
    frame->payload.resize(options_.max_payload_bytes);
    const Framing::Marks marks = framing_.markPayload(in, *n, absl::MakeSpan(frame->payload));
    if (!receivePayload(src, *n, frame)) return;
    if (std::string why = framing_.checkPayload(marks, frame->payload); !why.empty()) {
      return refuse(why);
    }
  }
  frame->payload.resize(*n);
  const size_t bytes = frame->header.size() + frame->payload.size();
  if (nic_) {
    ++busy_;
    clock_->sleepUntilNanos(
        nic_->delivery(clock_->nowNanos(), in.stamp, bytes, !frame->payload.empty()));
    --busy_;
  }
  ++progress_;
  std::lock_guard<std::mutex> lock(mu_);
  Peer& p = peers_[src];
  liveness_.heard(src, std::chrono::steady_clock::now());
  p.counters.received(bytes);
  if (p.state == PeerState::kClosing && p.counters.messages_received >= p.bye_messages) {
    p.state = PeerState::kClosed;
  }
}

bool Channel::receivePayload(int src, size_t n, Frame* frame) {
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
    if (gone || !body->waitRecv(nullptr, kNoGlooTimeout)) failure = "connection closed";
  } catch (const std::exception& e) {
    failure = e.what();
  }
  --busy_;
  std::lock_guard<std::mutex> lock(mu_);
  payload_recv_ = nullptr;
  payload_src_ = -1;
  liveness_.payloadDone();
  if (failure.empty()) return true;
  Peer& p = peers_[src];
  if (p.state != PeerState::kDead) {
    p.state = PeerState::kDead;
    p.reason = absl::StrCat("is dead (payload receive failed): ", failure);
  }
  p.reported = true;
  frame->payload.clear();
  frame->peer_status = absl::UnavailableError(absl::StrCat("channel: rank ", src, " ", p.reason));
  return false;
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
      if (failure[i].empty() && (!sends[i]->waitSend(nullptr, kNoGlooTimeout) ||
                                 !recvs[i]->waitRecv(nullptr, kNoGlooTimeout))) {
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
  header_.wake();
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
        p.goodbye->prepare(p.counters.messages_sent);
        tell.push_back(peer);
      }
    }
    // Wait for each ack: the peer then has read everything we sent before the bye.
    // Both waits are woken by the watcher when the peer's connection closes.
    try {
      for (int peer : tell) peers_[peer].goodbye->post();
    } catch (const std::exception&) {
      // The context broke: nobody is left to tell.
    }
    for (int peer : tell) peers_[peer].goodbye->await();
  }
  // Wake a receive in progress; the watchers keep acking byes until we are destroyed.
  header_.wake();
}

}  // namespace sparseps

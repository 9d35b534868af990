#include "transport/peer_liveness.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sparseps {
namespace {

std::string seconds(PeerLiveness::Duration d) {
  return absl::StrFormat("%.1f s", std::chrono::duration<double>(d).count());
}

}  // namespace

PeerLiveness::PeerLiveness(int world_size, std::chrono::milliseconds peer_timeout,
                           size_t max_payload_bytes, Time now)
    : timeout_(std::chrono::duration_cast<Duration>(peer_timeout)),
      max_payload_bytes_(max_payload_bytes),
      peers_(static_cast<size_t>(world_size)),
      last_look_(now) {
  for (Peer& p : peers_) p.last_heard = p.last_active = now;
}

void PeerLiveness::heard(int peer, Time now) { peers_[peer].last_heard = now; }

void PeerLiveness::pulsed(int peer, uint64_t progress, bool busy, Time now) {
  Peer& p = peers_[peer];
  p.last_heard = now;
  if (busy || progress != p.progress) p.last_active = now;
  p.progress = progress;
}

void PeerLiveness::sendWaiting(int peer, Time now) {
  peers_[peer].sending = true;
  peers_[peer].sending_since = now;
}

void PeerLiveness::sendDone(int peer) { peers_[peer].sending = false; }

void PeerLiveness::payloadAnnounced(int peer, size_t bytes, Time now) {
  payload_peer_ = peer;
  payload_bytes_ = bytes;
  payload_since_ = now;
}

void PeerLiveness::payloadDone() { payload_peer_ = -1; }

void PeerLiveness::exchangeStarted(int peer, Time now, Duration bound) {
  Peer& p = peers_[peer];
  p.exchanging = true;
  p.exchange_since = now;
  p.exchange_until = now + bound;
}

void PeerLiveness::exchangeDone(int peer, Time now) {
  Peer& p = peers_[peer];
  p.exchanging = false;
  p.last_heard = p.last_active = now;
}

PeerLiveness::Duration PeerLiveness::payloadBound(size_t bytes) const {
  const double share = static_cast<double>(bytes) / static_cast<double>(max_payload_bytes_);
  return std::max(timeout_ / 10,
                  std::chrono::duration_cast<Duration>(timeout_ * std::min(1.0, share)));
}

std::vector<PeerLiveness::Stall> PeerLiveness::look(Time now, const std::vector<Watch>& watch) {
  if (now - last_look_ > timeout_) {
    for (Peer& p : peers_) p.last_heard = p.last_active = p.sending_since = now;
    payload_since_ = now;
  }
  last_look_ = now;
  std::vector<Stall> stalled;
  for (int peer = 0; peer < static_cast<int>(peers_.size()); ++peer) {
    const Peer& p = peers_[peer];
    if (watch[peer] == Watch::kNone) continue;
    if (p.exchanging) {
      // Its own bound, whatever its state (one that said bye would never answer): until
      // then the peer may be connecting to others, without pulses.
      if (now > p.exchange_until) {
        stalled.push_back({peer, absl::StrCat("did not complete the handshake within ",
                                              seconds(now - p.exchange_since))});
      }
      continue;
    }
    if (watch[peer] != Watch::kAll) continue;
    if (now - p.last_heard > timeout_) {
      stalled.push_back({peer, absl::StrCat("sent no message and no pulse for ",
                                            seconds(now - p.last_heard),
                                            " (hung, stopped, or cut off)")});
    } else if (p.sending && now - p.sending_since > timeout_ && now - p.last_active > timeout_) {
      stalled.push_back({peer, absl::StrCat("left a message untaken for ",
                                            seconds(now - p.sending_since),
                                            " while doing nothing else")});
    } else if (payload_peer_ == peer && now - payload_since_ > payloadBound(payload_bytes_)) {
      stalled.push_back({peer, absl::StrCat("sent a header and not its ", payload_bytes_,
                                            "-byte payload for ", seconds(now - payload_since_),
                                            " (its bound: ", seconds(payloadBound(payload_bytes_)),
                                            ")")});
    }
  }
  return stalled;
}

}  // namespace sparseps

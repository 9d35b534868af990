#pragma once
// PeerLiveness: the channel's stall rules (channel.h, "Stalls") as a state machine over
// the times it is told, with no Gloo and no threads. The channel reports what happened
// (a message or pulse heard, a send of ours left waiting, a payload announced, a handshake
// begun) and asks look(now) which peers stalled and why; it then drops them. Every rule is
// so testable with made-up times. Not thread-safe: the channel holds its lock.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sparseps {

class PeerLiveness {
 public:
  using Time = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  // Peers 0..world_size-1, all heard at `now`.
  PeerLiveness(int world_size, std::chrono::milliseconds peer_timeout, size_t max_payload_bytes,
               Time now);

  // A message or a control word came from peer.
  void heard(int peer, Time now);
  // A pulse came: the peer is heard, and active when it is busy or took a message since
  // its last pulse (progress = the messages it has taken).
  void pulsed(int peer, uint64_t progress, bool busy, Time now);
  // A send of ours to peer waits on it, until sendDone.
  void sendWaiting(int peer, Time now);
  void sendDone(int peer);
  // peer announced a payload of `bytes` in a header; it must follow within payloadBound.
  void payloadAnnounced(int peer, size_t bytes, Time now);
  void payloadDone();
  // The handshake with peer must end by now + bound, whatever else the peer does.
  void exchangeStarted(int peer, Time now, Duration bound);
  // The handshake ended; the peer's pulses start now.
  void exchangeDone(int peer, Time now);

  // How long a payload of `bytes` may take after its header: its share of the peer timeout
  // (the largest payload gets all of it), at least a tenth of it.
  Duration payloadBound(size_t bytes) const;

  // What the channel still holds each peer to.
  enum class Watch {
    kNone,       // itself, or a peer whose connection is gone
    kHandshake,  // dead or closed: only a handshake in progress has a bound left
    kAll,        // live or closing
  };
  struct Stall {
    int peer;
    std::string why;
  };
  // The peers of `watch` (one entry per peer) that stalled at `now`. A look more than a peer
  // timeout after the last means this process itself did not run (stopped, starved): the
  // silence is its own, so no peer is blamed and every clock starts over.
  std::vector<Stall> look(Time now, const std::vector<Watch>& watch);

 private:
  struct Peer {
    Time last_heard;       // its last message or control word
    Time last_active;      // its last pulse that showed progress or work
    uint64_t progress = 0;
    bool sending = false;  // a send of ours waits on it
    Time sending_since;
    bool exchanging = false;
    Time exchange_since;
    Time exchange_until;
  };

  Duration timeout_;
  size_t max_payload_bytes_;
  std::vector<Peer> peers_;
  Time last_look_;
  int payload_peer_ = -1;  // -1: no payload announced
  size_t payload_bytes_ = 0;
  Time payload_since_;
};

}  // namespace sparseps

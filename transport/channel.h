#pragma once
// Channel: the Endpoint (endpoint.h) of real jobs, framed messages between the ranks of a
// Gloo context over UnboundBuffer. The transport does not know the protocol's wire
// header: ChannelOptions says how long it is and how to read the payload size from it. A
// receive takes a fixed-size header from ANY of the given ranks, checks the announced
// size against max_payload_bytes, and only then posts the payload's receive from that
// sender, at max_payload_bytes: Gloo terminates a process that receives a message longer
// than the posted buffer.
//
// Gloo facts designed around: a send completes only once the peer posted the matching
// receive (send() blocks until then); a Gloo wait timeout breaks the whole context for
// good, so no wait here relies on one: the channel keeps its own deadlines and drops one
// peer (closes that pair, aborts our waits on it) when it stalls; a receive from ANY rank
// is not woken when a peer dies, so one watcher thread per peer keeps a receive posted on
// a control slot: it sees the peer's orderly "bye" (goodbye.h), its pulses, and the
// closed connection (death), and wakes the receiving thread. Gloo terminates a process
// that receives more bytes than it posted, so every receive is posted at the protocol's
// maximum for its slot, and a payload shorter or longer than its header announced is
// refused (framing.h); only one longer than that maximum still ends the process, in Gloo.
// Gloo exceptions are caught here and come back as a Status naming the rank.
//
// The parts: framing.h (a message on the wire), header_receive.h (the header receive from
// any rank), peer_liveness.h (the stall rules), goodbye.h (the orderly end of a link),
// link_shaping.h (simulated links) and link_counters.h; the channel composes them.
//
// Stalls. Every peer_timeout / 5 each rank pulses every peer: a control word with its
// progress (messages it has taken) and whether it is busy (receiving a payload, sleeping
// out shaping, sending). A rank that was itself stopped for a peer timeout blames no
// peer for the silence it saw. A peer is dropped when, for peer_timeout, (1) nothing came from
// it, no message and no pulse (it hangs, is stopped, or the network is cut: TCP alone
// would wait for hours); (2) a send of ours waited on it while its pulses showed neither
// progress nor work (it never reads; a send of its own to us is no work, so two ranks
// sending to each other are cut, not stuck); or (3) its payload did not follow its header
// within its share of the timeout (payloadBound: a slow-loris peer is cut at once).
//
// A peer the rendezvous could not connect (rendezvous.h, Mesh::missing) is dead from the
// start, for that reason. exchange() (the handshake) holds each peer to a bound of its own:
// one that does not take our blob or send its own by then is dropped, and the others go on.
//
// Optional link shaping (link_shaping.h) delays each received message until its last
// byte would have arrived over the simulated links.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "transport/clock.h"
#include "transport/endpoint.h"
#include "transport/framing.h"
#include "transport/goodbye.h"
#include "transport/header_receive.h"
#include "transport/link_counters.h"
#include "transport/link_shaping.h"
#include "transport/peer_liveness.h"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace sparseps {

struct ChannelOptions {
  // Bytes of the protocol's fixed-size header.
  size_t header_bytes = 0;
  // Reads the payload size that a header announces (the protocol's wire format).
  Framing::PayloadSize payload_size;
  // The largest payload a peer may announce; larger announcements are refused.
  size_t max_payload_bytes = 0;
  // How long a peer may stall (see the top of this file) before it is dropped. It must
  // exceed the longest a payload takes on the real network after its header.
  std::chrono::milliseconds peer_timeout = std::chrono::seconds(30);
  // Simulated links of this process's NIC; none: no shaping.
  std::optional<ShapingOptions> shaping;
  // Time source of shaping; a SteadyClock when null.
  std::shared_ptr<Clock> clock;

  ChannelOptions& setHeaderBytes(size_t v) {
    header_bytes = v;
    return *this;
  }
  ChannelOptions& setPayloadSize(Framing::PayloadSize v) {
    payload_size = std::move(v);
    return *this;
  }
  ChannelOptions& setMaxPayloadBytes(size_t v) {
    max_payload_bytes = v;
    return *this;
  }
  ChannelOptions& setPeerTimeout(std::chrono::milliseconds v) {
    peer_timeout = v;
    return *this;
  }
  ChannelOptions& setShaping(ShapingOptions v) {
    shaping = v;
    return *this;
  }
  ChannelOptions& setClock(std::shared_ptr<Clock> v) {
    clock = std::move(v);
    return *this;
  }

  // Names the first bad field.
  absl::Status validate() const;
};

class Channel : public Endpoint {
 public:
  // Takes the connected context (rendezvous.h) and starts one watcher per connected peer.
  // A peer without a pair is dead from the start, for the reason `missing` gives (Mesh).
  static absl::StatusOr<std::unique_ptr<Channel>> create(
      std::shared_ptr<gloo::Context> context, ChannelOptions options,
      const std::map<int, std::string>& missing = {});
  ~Channel() override;  // shutdown() if not done yet
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  int rank() const override;
  int worldSize() const;

  // Sends one message (its first header_bytes are the header, which must announce the
  // rest, at most max_payload_bytes); blocks until dst has received it. Thread-safe
  // (sends are serialized). Errors: FailedPrecondition when dst has said goodbye before the
  // send, or closed after its goodbye, with all its messages taken, during it (or this
  // channel has shut down); Unavailable when dst is dead or dropped, or closed during the
  // send with messages of its still untaken.
  absl::Status send(int dst, absl::Span<const uint8_t> message) override;

  // Receives the next message from any live rank of `ranks`, in arrival order. A peer's
  // orderly shutdown (after all its data), its death or its breaking the framing comes
  // back once as a Frame whose peer_status says which (Unavailable "closed its
  // connection", Unavailable "is dead", InvalidArgument for framing); later calls skip
  // such ranks. Errors: Cancelled after interrupt(), FailedPrecondition when no rank is
  // live, InvalidArgument for a rank outside the world. One receiving thread at a time.
  // DeadlineExceeded when nothing came by `until` (the header receive stays posted for the
  // next call, which must ask for the same live ranks).
  using Endpoint::receive;
  absl::Status receive(absl::Span<const int> ranks, Frame* frame, Deadline until) override;
  // The same into a new Frame (tests, and callers that receive rarely).
  absl::StatusOr<Frame> receive(absl::Span<const int> ranks);

  // Closes the connection to `rank` and aborts every wait on it; a receive never reports
  // it. The peer sees this rank's connection close.
  void drop(int rank, const std::string& why) override;

  // Exchanges one fixed-size blob with each of `peers` (both sides call it with the same
  // size), e.g. the handshake's Hello. Returns each peer's blob, in the order of `peers`, or
  // why there is none: the peer is not live, or it did not take ours or send its own within
  // `bound` (it is dropped then; its silence until then is no stall: a peer may still be
  // connecting to others). InvalidArgument for a rank outside the world.
  absl::StatusOr<std::vector<absl::StatusOr<std::vector<uint8_t>>>> exchange(
      absl::Span<const int> peers, absl::Span<const uint8_t> mine,
      std::chrono::milliseconds bound);

  // Wakes a blocked receive (it returns Cancelled); with none in progress, the next one
  // returns Cancelled at once. Any thread.
  void interrupt();

  // Says goodbye to every live peer and waits (bounded) until each has read all we sent.
  // Idempotent; the destructor calls it. Until destruction the watchers still ack the
  // peers' byes, so peers shutting down at the same time never wait on us.
  void shutdown();

  // Whether `peer` may still send to us (neither closed, dead nor refused).
  bool isLive(int peer) const;
  LinkCounters counters(int peer) const;
  LinkCounters totalCounters() const;

 private:
  enum class PeerState { kLive, kClosing, kClosed, kDead };
  // Whether a peer in state s may still send us messages (a closing one sends its last).
  static bool sending(PeerState s) { return s == PeerState::kLive || s == PeerState::kClosing; }
  using Time = std::chrono::steady_clock::time_point;
  struct Peer {
    PeerState state = PeerState::kLive;
    uint64_t bye_messages = 0;  // data messages the peer sent us before its bye
    bool reported = false;      // its close or death was handed to receive
    std::string reason;         // why it is dead
    LinkCounters counters;
    bool gone = false;  // its connection closed (after a bye or not)
    std::unique_ptr<gloo::transport::UnboundBuffer> control;
    uint64_t control_word = 0;
    std::unique_ptr<Goodbye> goodbye;
    std::thread watcher;
    // The waits to abort when it is dropped (guarded by mu_): our send, if any, and
    // exchange()'s send of our blob and receive of its own.
    gloo::transport::UnboundBuffer* sending[2] = {nullptr, nullptr};
    gloo::transport::UnboundBuffer* exchange_send = nullptr;
    gloo::transport::UnboundBuffer* exchange_recv = nullptr;
    std::unique_ptr<gloo::transport::UnboundBuffer> pulse;  // our pulses to it
    uint64_t pulse_word = 0;
    std::thread pulser;
  };

  Channel(std::shared_ptr<gloo::Context> context, ChannelOptions options,
          const std::map<int, std::string>& missing);
  bool connected(int peer) const;  // has a pair: not this rank, not missing
  absl::Status receiveUntil(absl::Span<const int> ranks, Frame* frame);
  // Drops `peer`: closes its pair and aborts our waits on it; reported: no Frame for it.
  void cut(int peer, const std::string& why, bool reported);
  void watch(int peer);
  void pulse(int peer);
  void monitor();
  std::chrono::milliseconds monitorPeriod() const;  // how often the monitor looks
  // Records a control word from `peer` (mu_ held): a pulse (true) or its bye's message
  // count.
  bool notePulse(int peer, uint64_t word);
  // Aborts our waits on `peer` (mu_ held).
  void abortWaitsOn(int peer);
  void markDead(int peer, const std::string& reason);
  // A closed or dead peer of `ranks` whose state receive has not reported yet.
  std::optional<int> unreportedEvent(absl::Span<const int> ranks);
  void reportEvent(int peer, Frame* frame);
  // Receives the payload of the header message that arrived from src; a failure is src's.
  void receivePosted(int src, absl::Span<const uint8_t> message, Frame* frame);
  // Receives the `n` announced payload bytes from src into frame->payload (marked, at the
  // maximum). False when the receive failed: src is then dead, and frame says so.
  bool receivePayload(int src, size_t n, Frame* frame);
  // Whether one of ranks is no longer live (dead, dropped or closed).
  bool anyGone(absl::Span<const int> ranks) const;

  std::shared_ptr<gloo::Context> context_;
  const ChannelOptions options_;
  Framing framing_;
  std::shared_ptr<Clock> clock_;
  std::optional<ShapedNic> nic_;

  mutable std::mutex mu_;  // guards peers_' state, counters, liveness_ and interrupted_
  std::vector<Peer> peers_;
  PeerLiveness liveness_;
  bool interrupted_ = false;
  std::atomic<bool> stopping_{false};
  bool shut_down_ = false;

  std::mutex send_mu_;
  std::vector<uint8_t> send_frame_;

  // Stall detection: what our pulses report, and the monitor that applies the deadlines.
  std::atomic<uint64_t> progress_{0};  // messages taken
  std::atomic<int> busy_{0};           // operations in progress
  std::condition_variable monitor_cv_;  // with mu_: stop, or a new receive deadline
  bool stop_threads_ = false;
  Deadline receive_until_ = kNoDeadline;
  bool deadline_passed_ = false;
  std::thread monitor_;

  HeaderReceive header_;
  // The payload receive in progress, for the watcher to abort (guarded by mu_).
  gloo::transport::UnboundBuffer* payload_recv_ = nullptr;
  int payload_src_ = -1;
};

}  // namespace sparseps

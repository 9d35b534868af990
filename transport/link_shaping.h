#pragma once
// Link shaping: simulated bandwidth and latency, so that 1 Gbit/s and 10 Gbit/s runs mean
// something on one machine. Every process has one NIC with an uplink and a downlink
// (LinkSpec each). A worker's NIC is its own; the server's NIC is one shared resource for
// all workers' uploads (its downlink) and one for all replies (its uplink). Messages
// serialize on a link in arrival order.
//
// Model (cut-through, a message occupies each link for its handshake hs, then
// frameBytes(bytes)*8/bandwidth):
//   sender:   up_finish   = max(now, up.free) + hs + frames*8/up.bw;  up.free = up_finish
//             stamp       = up_finish + up.latency             (travels with the message)
//   receiver: down_finish = max(stamp, down.free + hs + frames*8/down.bw); down.free = down_finish
//             delivery    = down_finish + down.latency
// The handshake (handshakeNanos) is how Gloo moves a message: the Channel sends a header
// and then the payload, and Gloo sends each only once the receiver has posted a receive for
// it (the sender announces it with a control packet, NOTIFY_SEND_READY, and waits for the
// receiver's NOTIFY_RECV_READY). A receiver takes one message at a time, so it posts the
// next message's receives only after the last one is in: each message's round trips of
// control packets keep its sender's uplink and its receiver's downlink from carrying
// anything else.
// The receiving Channel sleeps until the delivery time (when the last byte would have
// arrived) before it hands the message up. Stamps are CLOCK_MONOTONIC nanoseconds, so
// shaping is meant for the processes of one machine.

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparseps {

struct LinkSpec {
  double bits_per_second = 0;  // 0: unlimited
  int64_t latency_ns = 0;
};

// The two directions of one process's NIC.
struct ShapingOptions {
  LinkSpec up;
  LinkSpec down;
};

// "100mbit", "1gbit", "10gbit", "2.5gbit", "800kbit", "1000bit" -> bits per second;
// "none" -> 0 (unlimited). Units are decimal (1gbit = 1e9 bit/s), as in tc(8).
absl::StatusOr<double> parseBandwidth(absl::string_view text);
// "50us", "1ms", "0.5s", "100ns", "0" -> nanoseconds.
absl::StatusOr<int64_t> parseDuration(absl::string_view text);

// One direction of a NIC: a resource that carries one message at a time.
class Link {
 public:
  explicit Link(LinkSpec spec) : spec_(spec) {}
  // Carries `bytes` after a handshake of handshake_ns, starting no earlier than
  // earliest_start_ns and finishing no earlier than earliest_finish_ns; returns when the
  // last byte has passed (latency excluded).
  int64_t reserve(int64_t earliest_start_ns, int64_t earliest_finish_ns, size_t bytes,
                  int64_t handshake_ns = 0);
  const LinkSpec& spec() const { return spec_; }

 private:
  const LinkSpec spec_;
  std::mutex mu_;
  int64_t free_ns_ = 0;
};

// A link's rate counts Ethernet frames (as tc and a NIC do): TCP carries a message in
// segments of at most 1,448 bytes (MTU 1500 less IP, TCP and its timestamp option), each
// framed by 66 bytes of headers (Ethernet 14, IP 20, TCP 32). A 1 Gbit/s link carries
// about 956 Mbit/s of messages.
inline constexpr size_t kSegmentPayloadBytes = 1448;
inline constexpr size_t kFrameHeaderBytes = 66;
// The bytes a message of `bytes` occupies on a link.
size_t frameBytes(size_t bytes);

// Nanoseconds to push a message of `bytes` through a link of this bandwidth, its frames'
// headers included (0 when unlimited).
int64_t transmitNanos(double bits_per_second, size_t bytes);

// A Gloo control packet carries one op's preamble (gloo/transport/tcp/pair.h): 48 bytes.
inline constexpr size_t kControlPacketBytes = 48;
// The round trips of control packets before a message moves between two NICs of this
// spec (both ends alike, as in every job here): one for the header, and one more for a
// payload. A round trip crosses the sender's uplink and the receiver's downlink one way,
// the receiver's uplink and the sender's downlink the other, each way with its latency.
int64_t handshakeNanos(const ShapingOptions& nic, bool has_payload);

// One process's NIC as a channel uses it: the sender stamps each message, the receiver
// delivers it when its last byte would have arrived (the model above).
class ShapedNic {
 public:
  explicit ShapedNic(const ShapingOptions& nic) : nic_(nic), up_(nic.up), down_(nic.down) {}
  // The stamp of a message of `bytes` sent at now_ns: when its last byte leaves our uplink,
  // plus the uplink's latency.
  int64_t stampSent(int64_t now_ns, size_t bytes, bool has_payload);
  // When a message of `bytes` with this stamp (0: its sender is unshaped, and the message
  // starts on our downlink at now_ns) is delivered, the downlink's latency included.
  int64_t delivery(int64_t now_ns, int64_t stamp, size_t bytes, bool has_payload);

 private:
  const ShapingOptions nic_;
  Link up_;
  Link down_;
};

}  // namespace sparseps

#pragma once
// Link shaping: simulated bandwidth and latency, so that 1 Gbit/s and 10 Gbit/s runs mean
// something on one machine. Every process has one NIC with an uplink and a downlink
// (LinkSpec each). A worker's NIC is its own; the server's NIC is one shared resource for
// all workers' uploads (its downlink) and one for all replies (its uplink). Messages
// serialize on a link in arrival order.
//
// Model (cut-through, a message occupies each link for frameBytes(bytes)*8/bandwidth):
//   sender:   up_finish   = max(now, up.free) + frames*8/up.bw;  up.free = up_finish
//             stamp       = up_finish + up.latency             (travels with the message)
//   receiver: down_finish = max(stamp, down.free + frames*8/down.bw); down.free = down_finish
//             delivery    = down_finish + down.latency
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
  // Carries `bytes` starting no earlier than earliest_start_ns and finishing no earlier
  // than earliest_finish_ns; returns when the last byte has passed (latency excluded).
  int64_t reserve(int64_t earliest_start_ns, int64_t earliest_finish_ns, size_t bytes);
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

}  // namespace sparseps

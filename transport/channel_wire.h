#pragma once
// The channel's framing on the wire, for the channel and for test programs that play a
// misbehaving peer: which Gloo slot carries what, the control words, and the wait limit
// the channel gives Gloo.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/types/span.h"

namespace sparseps::channel_wire {

// Gloo slots (tags) of the channel's message kinds.
inline constexpr uint64_t kHeaderSlot = 0x53500001;
inline constexpr uint64_t kPayloadSlot = 0x53500002;
inline constexpr uint64_t kControlSlot = 0x53500003;
inline constexpr uint64_t kExchangeSlot = 0x53500004;
inline constexpr uint64_t kAckSlot = 0x53500005;

// Gloo's own wait limit on the channel's waits, never reached: the channel's deadlines
// abort a stalled wait first (a Gloo timeout would break every pair of the context).
inline constexpr std::chrono::milliseconds kNoGlooTimeout = std::chrono::hours(24 * 30);

// The header message: [stamp][protocol header][tail]. The stamp is the shaping stamp
// (CLOCK_MONOTONIC ns when the last byte left the sender's uplink plus its latency; 0 when
// the sender is unshaped). The tail is a copy of the payload's last kTailBytes bytes (all
// of a shorter payload, zero-padded): Gloo does not say how many bytes a receive got, so
// the receiver fills those places with other bytes before it posts the payload's receive,
// and a payload that stops short leaves them different from the tail. The kTailBytes
// places after the announced payload get random bytes, which a longer payload overwrites
// (an overrun of fewer than 8 bytes that writes them exactly goes unnoticed, and is then
// harmless: only the announced bytes are read).
inline constexpr size_t kFrameBytes = sizeof(int64_t);
inline constexpr size_t kTailBytes = 8;

inline size_t headerMessageBytes(size_t header_bytes) {
  return kFrameBytes + header_bytes + kTailBytes;
}

// Writes the header message of (header, payload) to out (headerMessageBytes long).
inline void writeHeaderMessage(uint8_t* out, int64_t stamp, absl::Span<const uint8_t> header,
                               absl::Span<const uint8_t> payload) {
  std::memcpy(out, &stamp, kFrameBytes);
  std::memcpy(out + kFrameBytes, header.data(), header.size());
  uint8_t* tail = out + kFrameBytes + header.size();
  const size_t t = std::min(kTailBytes, payload.size());
  std::memset(tail, 0, kTailBytes);
  if (t > 0) std::memcpy(tail, payload.data() + payload.size() - t, t);
}

// Control words: a bye carries the count of data messages before it (below 2^62); a
// pulse has the top bit set, the next says busy, and the rest is the progress counter.
inline constexpr uint64_t kPulseBit = uint64_t{1} << 63;
inline constexpr uint64_t kBusyBit = uint64_t{1} << 62;
inline constexpr uint64_t kProgressMask = kBusyBit - 1;

}  // namespace sparseps::channel_wire

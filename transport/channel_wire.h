#pragma once
// The channel's framing on the wire, for the channel and for test programs that play a
// misbehaving peer: which Gloo slot carries what, and the control words.

#include <cstddef>
#include <cstdint>

namespace sparseps::channel_wire {

// Gloo slots (tags) of the channel's message kinds.
inline constexpr uint64_t kHeaderSlot = 0x53500001;
inline constexpr uint64_t kPayloadSlot = 0x53500002;
inline constexpr uint64_t kControlSlot = 0x53500003;
inline constexpr uint64_t kExchangeSlot = 0x53500004;
inline constexpr uint64_t kAckSlot = 0x53500005;

// Transport frame before the protocol header: the shaping stamp (CLOCK_MONOTONIC ns when
// the last byte left the sender's uplink plus its latency; 0 when the sender is unshaped).
inline constexpr size_t kFrameBytes = sizeof(int64_t);

// Control words: a bye carries the count of data messages before it (below 2^62); a
// pulse has the top bit set, the next says busy, and the rest is the progress counter.
inline constexpr uint64_t kPulseBit = uint64_t{1} << 63;
inline constexpr uint64_t kBusyBit = uint64_t{1} << 62;
inline constexpr uint64_t kProgressMask = kBusyBit - 1;

}  // namespace sparseps::channel_wire

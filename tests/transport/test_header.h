#pragma once
// A tiny stand-in for core's wire header in transport tests: 8 bytes, the payload size.

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "transport/channel.h"

namespace sparseps::testing {

inline constexpr size_t kTestHeaderBytes = 8;

// A message as Channel::send takes it: a header announcing `announced` payload bytes (a
// test may announce what the payload does not hold), then the payload.
inline std::vector<uint8_t> testMessage(uint64_t announced, absl::Span<const uint8_t> payload) {
  std::vector<uint8_t> m(kTestHeaderBytes + payload.size());
  std::memcpy(m.data(), &announced, sizeof(announced));
  if (!payload.empty()) std::memcpy(m.data() + kTestHeaderBytes, payload.data(), payload.size());
  return m;
}

// A received payload as plain bytes, to compare with what was sent.
inline std::vector<uint8_t> payloadOf(const Frame& frame) {
  return std::vector<uint8_t>(frame.payload.begin(), frame.payload.end());
}

inline absl::StatusOr<size_t> testPayloadSize(absl::Span<const uint8_t> header) {
  uint64_t n;
  std::memcpy(&n, header.data(), sizeof(n));
  return static_cast<size_t>(n);
}

inline ChannelOptions testChannelOptions(size_t max_payload_bytes) {
  return ChannelOptions()
      .setHeaderBytes(kTestHeaderBytes)
      .setPayloadSize(testPayloadSize)
      .setMaxPayloadBytes(max_payload_bytes);
}

}  // namespace sparseps::testing

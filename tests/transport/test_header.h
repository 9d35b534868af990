#pragma once
// A tiny stand-in for core's wire header in transport tests: 8 bytes, the payload size.

#include <array>
#include <cstdint>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "transport/channel.h"

namespace sparseps::testing {

inline constexpr size_t kTestHeaderBytes = 8;

inline std::array<uint8_t, kTestHeaderBytes> testHeader(uint64_t payload_bytes) {
  std::array<uint8_t, kTestHeaderBytes> h;
  std::memcpy(h.data(), &payload_bytes, sizeof(payload_bytes));
  return h;
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

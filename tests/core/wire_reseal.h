#pragma once
// For the wire's bad-input tests: after an edit of a message's payload, rewrite the
// header's payload size and checksum to match what follows it, so that the edit reaches
// the segment checks instead of the checksum's.

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "core/wire/wire.h"
#include "core/wire/wire_bytes.h"

namespace sparseps::wire_test {

inline void reseal(std::vector<uint8_t>& m) {
  MessageHeader h;
  h.kind = static_cast<MessageKind>(wire::loadLe<uint16_t>(m.data() + 6));
  h.segment_count = wire::loadLe<uint32_t>(m.data() + 40);
  h.payload_bytes = m.size() - kHeaderBytes;
  h.payload_checksum = payloadChecksum(absl::MakeConstSpan(m).subspan(kHeaderBytes));
  const std::array<uint8_t, kHeaderBytes> bytes = encodeHeader(h);
  std::copy(bytes.begin(), bytes.end(), m.begin());
}

}  // namespace sparseps::wire_test

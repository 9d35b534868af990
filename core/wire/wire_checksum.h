#pragma once
// The payload checksum of the wire format: the low 32 bits of XXH3-64 (xxHash, seed 0)
// over the payload bytes. XXH3 runs at tens of GB/s (the library picks its SSE2, AVX2 or
// AVX-512 kernel at run time), so the encoder and decoder can hash each chunk they copy
// while it is still in cache and a dense message costs about one memcpy. It detects
// corruption in transit; it is not a cryptographic check against a peer.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/types/span.h"

namespace sparseps {

// The checksum of a whole payload in one call.
uint32_t payloadChecksum(absl::Span<const uint8_t> payload);

// The same checksum over a payload that arrives in pieces: add() them in order, then
// value(). add() takes any split of the bytes; the result equals payloadChecksum of all.
class PayloadChecksum {
 public:
  PayloadChecksum();
  ~PayloadChecksum();
  PayloadChecksum(const PayloadChecksum&) = delete;
  PayloadChecksum& operator=(const PayloadChecksum&) = delete;

  void add(const uint8_t* bytes, size_t size);
  uint32_t value() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sparseps

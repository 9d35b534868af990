#include "core/wire/wire_checksum.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>  // XXH3 calls pick the widest vector unit at run time
#endif

namespace sparseps {

struct PayloadChecksum::State {
  XXH3_state_t xxh;
};

uint32_t payloadChecksum(absl::Span<const uint8_t> payload) {
  return static_cast<uint32_t>(XXH3_64bits(payload.data(), payload.size()));
}

PayloadChecksum::PayloadChecksum() : state_(std::make_unique<State>()) {
  XXH3_64bits_reset(&state_->xxh);
}

PayloadChecksum::~PayloadChecksum() = default;

void PayloadChecksum::add(const uint8_t* bytes, size_t size) {
  if (size != 0) XXH3_64bits_update(&state_->xxh, bytes, size);
}

uint32_t PayloadChecksum::value() const {
  return static_cast<uint32_t>(XXH3_64bits_digest(&state_->xxh));
}

}  // namespace sparseps

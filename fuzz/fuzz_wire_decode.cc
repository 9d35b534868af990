// libFuzzer target for the wire decoder: decodeHeader + decodePayload on arbitrary bytes
// against a fixed receiver layout. Each input is decoded as it is (which mostly exercises
// the header and checksum checks) and once more with its header's payload size and
// checksum made to match the bytes that follow, so mutations reach the segment parsers.
// A message that decodes must also re-encode (lossless, smallest encodings) and decode
// to the same segments: ids, sizes, dense flags, indices and value counts. A borrowing
// decode (dense values read in place) must accept exactly what the copying one does and
// re-encode to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/wire/wire.h"

namespace {

// The receiver's layout: segment sizes the seeds use (see fuzz_wire_seeds.cc), including
// a single element, bitmap padding and a large segment.
const sparseps::DecodeLimits& fuzzLimits() {
  static const sparseps::DecodeLimits limits =
      sparseps::DecodeLimits().allow(0, 100).allow(1, 13).allow(2, 1).allow(3, 500).allow(5, 1u << 20);
  return limits;
}

const sparseps::DecodeLimits& borrowingLimits() {
  static const sparseps::DecodeLimits limits = sparseps::DecodeLimits(fuzzLimits()).borrowDense(true);
  return limits;
}

bool sameSegments(const std::vector<sparseps::SegmentData>& a, const std::vector<sparseps::SegmentData>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].segment_id != b[i].segment_id || a[i].numel != b[i].numel ||
        a[i].dense != b[i].dense || a[i].indices != b[i].indices ||
        a[i].values.size() != b[i].values.size() || a[i].index_seed != b[i].index_seed ||
        a[i].code != b[i].code || a[i].code_arg != b[i].code_arg ||
        a[i].params != b[i].params || a[i].packed != b[i].packed) {
      return false;
    }
  }
  return true;
}

void decodeAndCheck(const sparseps::MessageHeader& header, absl::Span<const uint8_t> payload) {
  absl::StatusOr<std::vector<sparseps::SegmentData>> segments =
      sparseps::decodePayload(header, payload, fuzzLimits());
  absl::StatusOr<std::vector<sparseps::SegmentData>> borrowed =
      sparseps::decodePayload(header, payload, borrowingLimits());
  if (segments.ok() != borrowed.ok()) std::abort();
  if (!segments.ok()) return;
  absl::StatusOr<std::vector<uint8_t>> again = sparseps::encodeMessage(header, *segments);
  if (!again.ok()) std::abort();
  absl::StatusOr<std::vector<uint8_t>> again_borrowed = sparseps::encodeMessage(header, *borrowed);
  if (!again_borrowed.ok() || *again_borrowed != *again) std::abort();
  absl::StatusOr<sparseps::DecodedMessage> back = sparseps::decodeMessage(*again, fuzzLimits());
  if (!back.ok() || !sameSegments(*segments, back->segments)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::Span<const uint8_t> bytes(data, size);
  (void)sparseps::payloadBytesFromHeader(bytes);
  absl::StatusOr<sparseps::MessageHeader> header = sparseps::decodeHeader(bytes);
  if (!header.ok()) return 0;
  const absl::Span<const uint8_t> payload = bytes.subspan(sparseps::kHeaderBytes);
  decodeAndCheck(*header, payload);
  sparseps::MessageHeader sealed = *header;
  sealed.payload_bytes = payload.size();
  sealed.payload_checksum = sparseps::payloadChecksum(payload);
  decodeAndCheck(sealed, payload);
  return 0;
}

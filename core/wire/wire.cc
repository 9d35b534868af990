#include "core/wire/wire.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/wire/wire_bytes.h"

namespace sparseps {

absl::Status EncodeOptions::validate() const {
  if (forced && *forced == Encoding::kDeltaVarintF16 && !allow_f16) {
    return absl::InvalidArgumentError(
        "EncodeOptions.forced = delta_varint_f16 needs EncodeOptions.allow_f16 = true");
  }
  if (forced && *forced == Encoding::kDenseF32) {
    return absl::InvalidArgumentError(
        "EncodeOptions.forced = dense_f32: dense segments always use it, and a sparse "
        "segment must stay sparse; force one of the sparse encodings");
  }
  if (forced && (static_cast<uint8_t>(*forced) < static_cast<uint8_t>(Encoding::kDenseF32) ||
                 static_cast<uint8_t>(*forced) > static_cast<uint8_t>(Encoding::kBitmapF32))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "EncodeOptions.forced: ", static_cast<int>(*forced),
        " is not a sparse float encoding (coded and seeded segments keep their own)"));
  }
  return absl::OkStatus();
}

DecodeLimits& DecodeLimits::allow(uint32_t id, uint32_t numel) {
  if (numel_by_id.size() <= id) numel_by_id.resize(size_t{id} + 1, kNoSegment);
  numel_by_id[id] = numel;
  return *this;
}

absl::StatusOr<DecodeLimits> DecodeLimits::fromSpecs(const SegmentSpecs& specs) {
  DecodeLimits limits;
  for (const SegmentSpec& spec : specs) {
    if (spec.numel >= kNoSegment) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment ", spec.id, " has ", spec.numel, " elements, the wire format allows ",
          kNoSegment - 1));
    }
    limits.allow(spec.id, static_cast<uint32_t>(spec.numel));
  }
  return limits;
}

absl::Status encodeMessage(const MessageHeader& header, const std::vector<SegmentData>& segments,
                           const EncodeOptions& options, std::vector<uint8_t>* out) {
  if (absl::Status valid = options.validate(); !valid.ok()) return valid;
  if (segments.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("too many segments: ", segments.size()));
  }
  std::vector<Encoding> encodings;
  encodings.reserve(segments.size());
  size_t payload_bytes = 0;
  for (const SegmentData& segment : segments) {
    if (absl::Status valid = wire::validateSegment(segment); !valid.ok()) return valid;
    absl::StatusOr<wire::EncodingChoice> choice =
        wire::chooseEncoding(segment, options.forced, options.allow_f16);
    if (!choice.ok()) return choice.status();
    encodings.push_back(choice->encoding);
    payload_bytes += choice->bytes;
  }
  out->resize(kHeaderBytes + payload_bytes);
  uint8_t* payload = out->data() + kHeaderBytes;
  PayloadChecksum checksum;
  size_t written = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    written += wire::writeSegment(segments[i], encodings[i], payload + written, &checksum);
  }
  MessageHeader filled = header;
  filled.segment_count = static_cast<uint32_t>(segments.size());
  filled.payload_bytes = written;
  filled.payload_checksum = checksum.value();
  const std::array<uint8_t, kHeaderBytes> header_bytes = encodeHeader(filled);
  std::copy(header_bytes.begin(), header_bytes.end(), out->begin());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> encodeMessage(const MessageHeader& header,
                                                   const std::vector<SegmentData>& segments,
                                                   const EncodeOptions& options) {
  std::vector<uint8_t> message;
  if (absl::Status s = encodeMessage(header, segments, options, &message); !s.ok()) return s;
  return message;
}

namespace {

absl::Status checksumMismatch(uint32_t announced, uint32_t actual) {
  return absl::DataLossError(absl::StrCat("payload checksum mismatch: header says 0x",
                                          absl::Hex(announced, absl::kZeroPad8),
                                          ", payload has 0x", absl::Hex(actual, absl::kZeroPad8)));
}

// The segments of a payload of the announced size; the checksum is taken as they are read
// and compared by the caller.
absl::Status readSegments(const MessageHeader& header, absl::Span<const uint8_t> payload,
                          const DecodeLimits& limits, std::vector<SegmentData>* out,
                          PayloadChecksum* checksum, uint32_t* largest, double* squares) {
  // Each segment takes at least its own header: bound the count before sizing anything.
  if (uint64_t{header.segment_count} * kSegmentHeaderBytes > payload.size()) {
    return absl::InvalidArgumentError(absl::StrCat("truncated payload: ", header.segment_count,
                                                   " segments cannot fit in ", payload.size(),
                                                   " bytes"));
  }
  out->resize(header.segment_count);
  std::vector<bool> seen(limits.numel_by_id.size(), false);
  const uint8_t* p = payload.data();
  const uint8_t* end = p + payload.size();
  for (uint32_t s = 0; s < header.segment_count; ++s) {
    const auto fail = [s](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("segment #", s, ": ", what));
    };
    if (static_cast<size_t>(end - p) < kSegmentHeaderBytes) {
      return fail(absl::StrCat("truncated payload: segment header needs ", kSegmentHeaderBytes,
                               " bytes, ", end - p, " left"));
    }
    const uint8_t tag = p[0];
    const uint32_t id = wire::loadLe<uint32_t>(p + 1);
    const uint32_t numel = wire::loadLe<uint32_t>(p + 5);
    const uint32_t nonzeros = wire::loadLe<uint32_t>(p + 9);
    checksum->add(p, kSegmentHeaderBytes);
    p += kSegmentHeaderBytes;
    if (!isEncoding(tag)) {
      return fail(absl::StrCat("unknown encoding tag ", tag));
    }
    if (id >= limits.numel_by_id.size() || limits.numel_by_id[id] == DecodeLimits::kNoSegment) {
      return fail(absl::StrCat("unknown segment id ", id));
    }
    if (seen[id]) return fail(absl::StrCat("duplicate segment id ", id));
    seen[id] = true;
    if (numel != limits.numel_by_id[id]) {
      return fail(absl::StrCat("numel ", numel, " of segment id ", id,
                               " does not match the layout's ", limits.numel_by_id[id]));
    }
    const auto encoding = static_cast<Encoding>(tag);
    absl::Status read = wire::readSegmentBody(encoding, id, numel, nonzeros, &p, end,
                                              limits.value_check, limits.borrow_dense,
                                              &(*out)[s], checksum, largest, squares);
    if (!read.ok()) {
      return fail(absl::StrCat("(id ", id, ", ", encodingName(encoding), ") ", read.message()));
    }
  }
  if (p != end) {
    return absl::InvalidArgumentError(absl::StrCat(end - p, " trailing bytes after the last of ",
                                                   header.segment_count, " segments"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status decodePayload(const MessageHeader& header, absl::Span<const uint8_t> payload,
                           const DecodeLimits& limits, std::vector<SegmentData>* out,
                           float* largest, double* squares) {
  if (payload.size() != header.payload_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("payload size mismatch: header announces ",
                                                   header.payload_bytes, " bytes, got ",
                                                   payload.size()));
  }
  PayloadChecksum checksum;
  uint32_t largest_bits = 0;
  double sum = 0;
  absl::Status read = readSegments(header, payload, limits, out, &checksum, &largest_bits,
                                   squares != nullptr ? &sum : nullptr);
  if (!read.ok()) {
    // A damaged payload is reported as damaged, not by the first check its damage trips.
    const uint32_t actual = payloadChecksum(payload);
    return actual != header.payload_checksum ? checksumMismatch(header.payload_checksum, actual)
                                             : read;
  }
  if (checksum.value() != header.payload_checksum) {
    return checksumMismatch(header.payload_checksum, checksum.value());
  }
  if (largest != nullptr) std::memcpy(largest, &largest_bits, sizeof *largest);
  if (squares != nullptr) *squares = sum;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SegmentData>> decodePayload(const MessageHeader& header,
                                                       absl::Span<const uint8_t> payload,
                                                       const DecodeLimits& limits) {
  std::vector<SegmentData> segments;
  if (absl::Status s = decodePayload(header, payload, limits, &segments); !s.ok()) return s;
  return segments;
}

absl::StatusOr<DecodedMessage> decodeMessage(absl::Span<const uint8_t> message,
                                             const DecodeLimits& limits) {
  absl::StatusOr<MessageHeader> header = decodeHeader(message);
  if (!header.ok()) return header.status();
  absl::StatusOr<std::vector<SegmentData>> segments =
      decodePayload(*header, message.subspan(kHeaderBytes), limits);
  if (!segments.ok()) return segments.status();
  return DecodedMessage{*header, *std::move(segments)};
}

}  // namespace sparseps

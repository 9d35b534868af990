#include "transport/framing.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sparseps {

using channel_wire::kFrameBytes;
using channel_wire::kTailBytes;

static_assert(kTailBytes == sizeof(uint64_t), "a canary is one draw of the generator");

Framing::Framing(size_t header_bytes, PayloadSize payload_size, size_t max_payload_bytes)
    : header_bytes_(header_bytes),
      payload_size_(std::move(payload_size)),
      max_payload_bytes_(max_payload_bytes),
      canary_rng_(std::random_device{}()) {}

absl::StatusOr<Framing::Outgoing> Framing::split(int dst, absl::Span<const uint8_t> message) const {
  if (message.size() < header_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat("channel: a message of ", message.size(),
                                                   " bytes is shorter than the ", header_bytes_,
                                                   "-byte header"));
  }
  Outgoing out{message.subspan(0, header_bytes_), message.subspan(header_bytes_)};
  absl::StatusOr<size_t> announced = payload_size_(out.header);
  if (!announced.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("channel: send to rank ", dst,
                                                   ": bad header: ", announced.status().message()));
  }
  if (*announced != out.payload.size() || out.payload.size() > max_payload_bytes_) {
    return absl::InvalidArgumentError(
        absl::StrCat("channel: send to rank ", dst, ": header announces ", *announced,
                     " bytes, payload has ", out.payload.size(), ", limit ", max_payload_bytes_));
  }
  return out;
}

Framing::Incoming Framing::parse(absl::Span<const uint8_t> header_message) const {
  Incoming in;
  std::memcpy(&in.stamp, header_message.data(), kFrameBytes);
  in.header = header_message.subspan(kFrameBytes, header_bytes_);
  std::copy_n(header_message.end() - kTailBytes, kTailBytes, in.tail.begin());
  return in;
}

absl::StatusOr<size_t> Framing::announced(absl::Span<const uint8_t> header) const {
  absl::StatusOr<size_t> n = payload_size_(header);
  if (!n.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("sent a bad header: ", n.status().message()));
  }
  if (*n > max_payload_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "announced a payload of ", *n, " bytes, more than the limit of ", max_payload_bytes_));
  }
  return n;
}

Framing::Marks Framing::markPayload(const Incoming& in, size_t n, absl::Span<uint8_t> buffer) {
  Marks m;
  m.n = n;
  m.tail_bytes = std::min(kTailBytes, n);
  std::copy_n(in.tail.begin(), m.tail_bytes, m.tail.begin());
  for (size_t i = 0; i < m.tail_bytes; ++i) {
    buffer[n - m.tail_bytes + i] = static_cast<uint8_t>(~m.tail[i]);
  }
  m.canary_bytes = std::min(kTailBytes, buffer.size() - n);
  const uint64_t random = canary_rng_();
  std::memcpy(m.canary.data(), &random, m.canary.size());
  std::copy_n(m.canary.begin(), m.canary_bytes, buffer.begin() + static_cast<ptrdiff_t>(n));
  return m;
}

std::string Framing::checkPayload(const Marks& m, absl::Span<const uint8_t> payload) const {
  if (!std::equal(m.tail.begin(), m.tail.begin() + m.tail_bytes,
                  payload.begin() + static_cast<ptrdiff_t>(m.n - m.tail_bytes))) {
    return absl::StrCat("sent a payload shorter than the ", m.n, " bytes its header announced");
  }
  if (!std::equal(m.canary.begin(), m.canary.begin() + m.canary_bytes,
                  payload.begin() + static_cast<ptrdiff_t>(m.n))) {
    return absl::StrCat("sent a payload longer than the ", m.n, " bytes its header announced");
  }
  return "";
}

}  // namespace sparseps

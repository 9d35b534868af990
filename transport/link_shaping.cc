#include "transport/link_shaping.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

struct Unit {
  absl::string_view suffix;
  double scale;
};

// Splits "12.5gbit" into 12.5 and "gbit"; the number must be finite and >= 0.
absl::StatusOr<std::pair<double, std::string>> splitNumber(absl::string_view what,
                                                           absl::string_view text) {
  std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  size_t end = 0;
  while (end < s.size() && (absl::ascii_isdigit(s[end]) || s[end] == '.')) ++end;
  double value = 0;
  if (end == 0 || !absl::SimpleAtod(s.substr(0, end), &value) || !std::isfinite(value) ||
      value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot parse \"", text, "\": expected a number and a unit"));
  }
  return std::make_pair(value, s.substr(end));
}

}  // namespace

absl::StatusOr<double> parseBandwidth(absl::string_view text) {
  std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (lower == "none" || lower == "unlimited") return 0.0;
  auto parts = splitNumber("bandwidth", text);
  if (!parts.ok()) return parts.status();
  static constexpr Unit kUnits[] = {
      {"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12}};
  for (const Unit& unit : kUnits) {
    if (parts->second == unit.suffix) {
      if (parts->first == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("bandwidth: \"", text, "\" is zero; use \"none\" for an unlimited link"));
      }
      return parts->first * unit.scale;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "bandwidth: unknown unit in \"", text,
      "\": expected bit, kbit, mbit, gbit or tbit (e.g. 100mbit, 1gbit, 10gbit) or none"));
}

absl::StatusOr<int64_t> parseDuration(absl::string_view text) {
  auto parts = splitNumber("duration", text);
  if (!parts.ok()) return parts.status();
  if (parts->second.empty() && parts->first == 0) return 0;
  static constexpr Unit kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (const Unit& unit : kUnits) {
    if (parts->second == unit.suffix) return std::llround(parts->first * unit.scale);
  }
  return absl::InvalidArgumentError(absl::StrCat("duration: unknown unit in \"", text,
                                                 "\": expected ns, us, ms or s (e.g. 50us, 1ms)"));
}

size_t frameBytes(size_t bytes) {
  const size_t segments = (bytes + kSegmentPayloadBytes - 1) / kSegmentPayloadBytes;
  return bytes + segments * kFrameHeaderBytes;
}

int64_t transmitNanos(double bits_per_second, size_t bytes) {
  if (bits_per_second <= 0) return 0;
  return std::llround(static_cast<double>(frameBytes(bytes)) * 8.0 * 1e9 / bits_per_second);
}

int64_t handshakeNanos(const ShapingOptions& nic, bool has_payload) {
  const int64_t round_trip = 2 * (transmitNanos(nic.up.bits_per_second, kControlPacketBytes) +
                                  transmitNanos(nic.down.bits_per_second, kControlPacketBytes) +
                                  nic.up.latency_ns + nic.down.latency_ns);
  return (has_payload ? 2 : 1) * round_trip;
}

int64_t Link::reserve(int64_t earliest_start_ns, int64_t earliest_finish_ns, size_t bytes,
                      int64_t handshake_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t start = std::max(earliest_start_ns, free_ns_);
  const int64_t finish = std::max(
      earliest_finish_ns, start + handshake_ns + transmitNanos(spec_.bits_per_second, bytes));
  free_ns_ = finish;
  return finish;
}

int64_t ShapedNic::stampSent(int64_t now_ns, size_t bytes, bool has_payload) {
  return up_.reserve(now_ns, 0, bytes, handshakeNanos(nic_, has_payload)) + nic_.up.latency_ns;
}

int64_t ShapedNic::delivery(int64_t now_ns, int64_t stamp, size_t bytes, bool has_payload) {
  const int64_t handshake = handshakeNanos(nic_, has_payload);
  const int64_t finish = stamp == 0 ? down_.reserve(now_ns, 0, bytes, handshake)
                                    : down_.reserve(0, stamp, bytes, handshake);
  return finish + nic_.down.latency_ns;
}

}  // namespace sparseps

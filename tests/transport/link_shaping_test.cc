#include "transport/link_shaping.h"

#include <gtest/gtest.h>

namespace sparseps {
namespace {

TEST(ParseBandwidth, AcceptsTcUnits) {
  EXPECT_DOUBLE_EQ(*parseBandwidth("100mbit"), 100e6);
  EXPECT_DOUBLE_EQ(*parseBandwidth("1gbit"), 1e9);
  EXPECT_DOUBLE_EQ(*parseBandwidth("10gbit"), 10e9);
  EXPECT_DOUBLE_EQ(*parseBandwidth("2.5Gbit"), 2.5e9);
  EXPECT_DOUBLE_EQ(*parseBandwidth("800kbit"), 800e3);
  EXPECT_DOUBLE_EQ(*parseBandwidth("none"), 0.0);
}

TEST(ParseBandwidth, RejectsWithClearErrors) {
  for (const char* bad : {"", "fast", "1gb", "gbit", "-1gbit", "1.2.3gbit", "0gbit"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<double> r = parseBandwidth(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
    EXPECT_NE(r.status().message().find("bandwidth"), absl::string_view::npos) << r.status();
  }
  EXPECT_NE(parseBandwidth("1gb").status().message().find("unknown unit"), absl::string_view::npos);
  EXPECT_NE(parseBandwidth("0gbit").status().message().find("none"), absl::string_view::npos);
}

TEST(ParseDuration, AcceptsUnits) {
  EXPECT_EQ(*parseDuration("50us"), 50'000);
  EXPECT_EQ(*parseDuration("1ms"), 1'000'000);
  EXPECT_EQ(*parseDuration("0.5s"), 500'000'000);
  EXPECT_EQ(*parseDuration("100ns"), 100);
  EXPECT_EQ(*parseDuration("0"), 0);
}

TEST(ParseDuration, RejectsWithClearErrors) {
  for (const char* bad : {"", "50", "5 minutes", "us", "-1ms", "1h"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<int64_t> r = parseDuration(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("duration"), absl::string_view::npos) << r.status();
  }
}

TEST(Link, SerializesMessagesInArrivalOrder) {
  // 1 Gbit/s: 1000 bytes are one frame of 1066 bytes, 8528 ns.
  Link link(LinkSpec{1e9, 0});
  EXPECT_EQ(link.reserve(0, 0, 1000), 8528);
  EXPECT_EQ(link.reserve(0, 0, 1000), 17056);      // queued behind the first
  EXPECT_EQ(link.reserve(50000, 0, 1000), 58528);  // idle link: starts on arrival
}

TEST(Link, SharedDownlinkOfTheServerSerializesAllWorkers) {
  // Two workers with 1 Gbit/s uplinks send 1000 bytes at t=0 to a server whose NIC is
  // 1 Gbit/s: both leave their uplinks at 8.528 us, the second waits for the first downstream.
  Link worker_a(LinkSpec{1e9, 0}), worker_b(LinkSpec{1e9, 0}), server_down(LinkSpec{1e9, 0});
  const int64_t stamp_a = worker_a.reserve(0, 0, 1000);
  const int64_t stamp_b = worker_b.reserve(0, 0, 1000);
  EXPECT_EQ(server_down.reserve(0, stamp_a, 1000), 8528);
  EXPECT_EQ(server_down.reserve(0, stamp_b, 1000), 17056);
}

TEST(Link, AHandshakeHoldsTheLinkBeforeTheFrames) {
  // 1 Gbit/s, 1000 bytes: 8528 ns of frames after a handshake of 2000 ns.
  Link link(LinkSpec{1e9, 0});
  EXPECT_EQ(link.reserve(0, 0, 1000, 2000), 10528);
  EXPECT_EQ(link.reserve(0, 0, 1000, 2000), 21056);  // the next one's handshake waits too
  EXPECT_EQ(link.reserve(50000, 0, 1000, 2000), 60528);  // idle: starts on arrival
  EXPECT_EQ(link.reserve(0, 80000, 1000, 2000), 80000);  // finishing no earlier than asked
}

TEST(HandshakeNanos, CountsControlPacketsOverFourLinksEachRoundTrip) {
  // 1 Mbit/s each way: a control packet of 48 bytes is one frame of 114 bytes, 912 us a
  // link; a round trip crosses four links (two each way) and two latencies of 5 ms.
  const ShapingOptions nic{LinkSpec{1e6, 5'000'000}, LinkSpec{1e6, 0}};
  const int64_t round_trip = 4 * 912'000 + 2 * 5'000'000;
  EXPECT_EQ(handshakeNanos(nic, /*has_payload=*/false), round_trip);  // the header's alone
  EXPECT_EQ(handshakeNanos(nic, /*has_payload=*/true), 2 * round_trip);
  EXPECT_EQ(handshakeNanos(ShapingOptions{}, true), 0);  // unlimited, no latency
}

TEST(Link, UnlimitedLinkOnlyOrders) {
  Link link(LinkSpec{0, 0});
  EXPECT_EQ(link.reserve(100, 0, 1 << 20), 100);
  EXPECT_EQ(link.reserve(0, 50, 1 << 20), 100);  // never before the previous message
}

TEST(FrameBytes, EachSegmentOfTcpPayloadCarriesItsHeaders) {
  EXPECT_EQ(frameBytes(0), 0u);
  EXPECT_EQ(frameBytes(1), 1u + 66);
  EXPECT_EQ(frameBytes(1448), 1514u);  // one full frame at MTU 1500
  EXPECT_EQ(frameBytes(1449), 1449u + 2 * 66);
  EXPECT_EQ(frameBytes(1'000'000), 1'000'000u + 691 * 66);  // 690 full segments and a part
}

TEST(TransmitNanos, MatchesFrameBitsOverRate) {
  EXPECT_EQ(transmitNanos(100e6, 1'000'000), 83'648'480);  // 1,045,606 bytes * 80 ns
  EXPECT_EQ(transmitNanos(10e9, 1'000'000), 836'485);      // * 0.8 ns, rounded
  EXPECT_EQ(transmitNanos(0, 1'000'000), 0);
}

TEST(ShapedNic, StampsOnTheUplinkAndDeliversAfterTheDownlink) {
  // 1 Gbit/s each way, 10 us latency: 1000 bytes are 8528 ns of frames after the handshake.
  const ShapingOptions spec{LinkSpec{1e9, 10'000}, LinkSpec{1e9, 10'000}};
  const int64_t hs = handshakeNanos(spec, /*has_payload=*/true);
  ShapedNic sender(spec), receiver(spec);
  const int64_t first = sender.stampSent(0, 1000, true);
  EXPECT_EQ(first, hs + 8528 + 10'000);
  EXPECT_EQ(sender.stampSent(0, 1000, true), 2 * (hs + 8528) + 10'000);  // queued behind
  // The receiver's downlink finishes no earlier than the stamp, then adds its latency.
  EXPECT_EQ(receiver.delivery(0, first, 1000, true), first + 10'000);
  // An unshaped sender (stamp 0): the message starts on the downlink on arrival, behind
  // the first.
  EXPECT_EQ(receiver.delivery(0, 0, 1000, true), first + hs + 8528 + 10'000);
}

}  // namespace
}  // namespace sparseps

// The stall rules on made-up times, without Gloo: each rule drops a peer just after its
// bound and not before, work or progress keeps a peer we send to alive, a handshake has a
// bound of its own, and a process that did not run blames nobody.

#include "transport/peer_liveness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace sparseps {
namespace {

using ::testing::HasSubstr;
using Watch = PeerLiveness::Watch;
using ms = std::chrono::milliseconds;

constexpr ms kTimeout(1000);
constexpr size_t kMaxPayload = 1000;
const PeerLiveness::Time t0{};

// Rank 0 watching peers 1 and 2.
const std::vector<Watch> kBoth = {Watch::kNone, Watch::kAll, Watch::kAll};

std::vector<int> stalledPeers(PeerLiveness& l, ms at, const std::vector<Watch>& watch = kBoth) {
  std::vector<int> peers;
  for (const PeerLiveness::Stall& s : l.look(t0 + at, watch)) peers.push_back(s.peer);
  return peers;
}

// Looks every 100 ms (as the channel's monitor does) from `from` to `to`, keeping peer 2
// heard, and returns when peer 1 is first found stalled (-1: never).
int firstStall(PeerLiveness& l, int from, int to) {
  for (int t = from; t <= to; t += 100) {
    l.heard(2, t0 + ms(t));
    for (int peer : stalledPeers(l, ms(t))) {
      if (peer == 1) return t;
    }
  }
  return -1;
}

TEST(PeerLivenessTest, ASilentPeerIsDroppedAfterThePeerTimeoutAndNotBefore) {
  PeerLiveness l(3, kTimeout, kMaxPayload, t0);
  l.heard(1, t0 + ms(300));
  EXPECT_EQ(firstStall(l, 100, 3000), 1400);  // heard at 300: silent for more than 1000
  const auto stalls = l.look(t0 + ms(1400), kBoth);
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_THAT(stalls[0].why, HasSubstr("sent no message and no pulse for 1.1 s"));
}

TEST(PeerLivenessTest, PulsesKeepAPeerAlive) {
  PeerLiveness l(3, kTimeout, kMaxPayload, t0);
  for (int t = 100; t <= 5000; t += 100) {
    if (t % 200 == 0) l.pulsed(1, /*progress=*/0, /*busy=*/false, t0 + ms(t));
    l.heard(2, t0 + ms(t));
    EXPECT_TRUE(stalledPeers(l, ms(t)).empty()) << t;
  }
}

TEST(PeerLivenessTest, APeerThatNeverTakesOurMessageIsDroppedWhileIdle) {
  PeerLiveness l(3, kTimeout, kMaxPayload, t0);
  l.sendWaiting(1, t0 + ms(100));
  // It pulses but shows neither progress nor work: cut once both the send and its
  // idleness are older than the timeout.
  int dropped = -1;
  for (int t = 200; t <= 3000 && dropped < 0; t += 100) {
    l.pulsed(1, 7, false, t0 + ms(t));
    l.heard(2, t0 + ms(t));
    for (const auto& s : l.look(t0 + ms(t), kBoth)) {
      dropped = t;
      EXPECT_THAT(s.why, HasSubstr("left a message untaken"));
    }
  }
  // Last active at 200 (its first pulse moved its progress from 0 to 7).
  EXPECT_EQ(dropped, 1300);
}

TEST(PeerLivenessTest, ProgressOrWorkKeepsAPeerWeSendToAlive) {
  for (bool busy : {false, true}) {
    PeerLiveness l(3, kTimeout, kMaxPayload, t0);
    l.sendWaiting(1, t0);
    uint64_t progress = 0;
    for (int t = 100; t <= 5000; t += 100) {
      l.pulsed(1, busy ? 0 : ++progress, busy, t0 + ms(t));
      l.heard(2, t0 + ms(t));
      EXPECT_TRUE(stalledPeers(l, ms(t)).empty()) << t << (busy ? " busy" : " progressing");
    }
    l.sendDone(1);
  }
}

TEST(PeerLivenessTest, APayloadMustFollowItsHeaderWithinItsShare) {
  PeerLiveness l(3, kTimeout, kMaxPayload, t0);
  EXPECT_EQ(l.payloadBound(kMaxPayload), ms(1000));
  EXPECT_EQ(l.payloadBound(500), ms(500));
  EXPECT_EQ(l.payloadBound(10), ms(100));  // at least a tenth of the timeout
  l.payloadAnnounced(1, 500, t0 + ms(100));
  int dropped = -1;
  for (int t = 200; t <= 3000 && dropped < 0; t += 100) {
    l.pulsed(1, 0, true, t0 + ms(t));  // pulsing, busy: still cut for the payload
    l.heard(2, t0 + ms(t));
    for (const auto& s : l.look(t0 + ms(t), kBoth)) {
      dropped = t;
      EXPECT_THAT(s.why, HasSubstr("not its 500-byte payload"));
    }
  }
  EXPECT_EQ(dropped, 700);
  // Once the payload came, no bound is left.
  PeerLiveness done(3, kTimeout, kMaxPayload, t0);
  done.payloadAnnounced(1, 500, t0);
  done.payloadDone();
  done.pulsed(1, 0, false, t0 + ms(900));
  EXPECT_TRUE(stalledPeers(done, ms(900)).empty());
}

TEST(PeerLivenessTest, AHandshakeHasItsOwnBoundWhateverThePeersState) {
  PeerLiveness l(3, kTimeout, kMaxPayload, t0);
  l.exchangeStarted(1, t0, ms(5000));
  // Silent for longer than the timeout, yet within the handshake's bound: not cut.
  for (int t = 100; t <= 5000; t += 100) {
    l.heard(2, t0 + ms(t));
    EXPECT_TRUE(stalledPeers(l, ms(t)).empty()) << t;
  }
  // A closed peer is still held to it; a gone one is not.
  const std::vector<Watch> closed = {Watch::kNone, Watch::kHandshake, Watch::kAll};
  const auto stalls = l.look(t0 + ms(5100), closed);
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_THAT(stalls[0].why, HasSubstr("did not complete the handshake within 5.1 s"));
  EXPECT_TRUE(l.look(t0 + ms(5200), {Watch::kNone, Watch::kNone, Watch::kAll}).empty());
  // Done: its pulses start now.
  l.exchangeDone(1, t0 + ms(5200));
  EXPECT_EQ(firstStall(l, 5300, 8000), 6300);
}

TEST(PeerLivenessTest, OnlyLivePeersAreHeldToTheOtherRules) {
  PeerLiveness l(3, kTimeout, kMaxPayload, t0);
  const std::vector<Watch> closed = {Watch::kNone, Watch::kHandshake, Watch::kNone};
  EXPECT_TRUE(l.look(t0 + ms(900), closed).empty());
  EXPECT_TRUE(l.look(t0 + ms(1800), closed).empty());
}

TEST(PeerLivenessTest, AProcessThatDidNotRunBlamesNoPeer) {
  PeerLiveness l(3, kTimeout, kMaxPayload, t0);
  l.sendWaiting(1, t0);
  l.payloadAnnounced(2, kMaxPayload, t0);
  EXPECT_TRUE(stalledPeers(l, ms(100)).empty());
  // Nothing ran between 100 ms and 5 s (the process was stopped): every clock restarts.
  EXPECT_TRUE(stalledPeers(l, ms(5000)).empty());
  EXPECT_TRUE(stalledPeers(l, ms(5900)).empty());
  EXPECT_THAT(stalledPeers(l, ms(6100)), ::testing::ElementsAre(1, 2));
}

}  // namespace
}  // namespace sparseps

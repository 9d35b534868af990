// A peer process that dies (SIGKILL) is reported by rank, without a hang, while the
// other peers go on. channel_peer runs the other ranks as real processes.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "tests/transport/mesh.h"
#include "tests/transport/peer_process.h"
#include "tests/transport/test_header.h"

namespace sparseps {
namespace {

std::vector<std::string> peerArgs(const std::string& dir, int rank, int world,
                                  const std::string& mode) {
  return {CHANNEL_PEER_PATH,
          "--store=" + dir,
          "--run=dead",
          "--rank=" + std::to_string(rank),
          "--world=" + std::to_string(world),
          "--mode=" + mode,
          "--messages=3",
          "--bytes=1000"};
}

TEST(DeadPeer, IsReportedByRankAndTheOthersGoOn) {
  const testing::TempDir store("sparseps_transport_");
  const std::string dir = store.str();
  testing::ChildProcess hanging(peerArgs(dir, 1, 3, "hang"));
  testing::ChildProcess sender(peerArgs(dir, 2, 3, "sender"));
  ASSERT_TRUE(hanging.started() && sender.started());
  auto context = connectWithFileStore(testing::loopbackOptions(dir, 0, 3).setRunId("dead"));
  ASSERT_TRUE(context.ok()) << context.status();
  auto channel = Channel::create(*context, testing::testChannelOptions(1000));
  ASSERT_TRUE(channel.ok()) << channel.status();
  // Never hang: a watchdog interrupts the receive (the test then fails on Cancelled).
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 200 && !done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!done) (*channel)->interrupt();
  });
  const absl::Cleanup join = [&] {
    done = true;
    watchdog.join();
  };
  // Rank 2's data and shutdown; rank 1 is killed while we wait on it.
  int data = 0, shutdowns = 0, deaths = 0;
  bool killed = false;
  while (data + shutdowns + deaths < 5) {
    auto m = (*channel)->receive(std::vector<int>{1, 2});
    ASSERT_TRUE(m.ok()) << m.status();  // a peer's end is a Frame, not a channel error
    if (m->src == 1) {
      ASSERT_TRUE(absl::IsUnavailable(m->peer_status)) << m->peer_status;
      EXPECT_EQ(m->peer_status.message().rfind("channel: rank 1 is dead", 0), 0u) << m->peer_status;
      ++deaths;
      continue;
    }
    if (!m->peer_status.ok()) {
      EXPECT_EQ(m->peer_status.message(), "channel: rank 2 closed its connection");
      ++shutdowns;
      if (!killed) {
        hanging.killNow();
        killed = true;
      }
    } else {
      EXPECT_EQ(m->src, 2);
      EXPECT_EQ(testing::payloadOf(*m), std::vector<uint8_t>(1000, 2));
      ++data;
    }
  }
  EXPECT_EQ(data, 3);
  EXPECT_EQ(shutdowns, 1);
  EXPECT_EQ(deaths, 1);
  EXPECT_FALSE((*channel)->isLive(1));
  EXPECT_TRUE(absl::IsFailedPrecondition((*channel)->receive(std::vector<int>{1, 2}).status()));
  EXPECT_EQ(sender.wait(std::chrono::seconds(10)), 0);
}

// Rank 1 dies with its message half-delivered: our receive was posted on its connection
// when the connection failed. Gloo leaves that failure in the receive's buffer; the
// receives from the others must not inherit it, whether the receive was waiting when rank 1
// died, or had been woken before (by its deadline), left posted on rank 1, and learns of
// the death from the channel's watcher first.
void dieMidMessage(bool woken_before) {
  const testing::TempDir store("sparseps_transport_");
  const std::string dir = store.str();
  testing::ChildProcess stopped(peerArgs(dir, 1, 3, "stop-in-send"));
  testing::ChildProcess sender(peerArgs(dir, 2, 3, "sender"));
  ASSERT_TRUE(stopped.started() && sender.started());
  auto context = connectWithFileStore(testing::loopbackOptions(dir, 0, 3).setRunId("dead"));
  ASSERT_TRUE(context.ok()) << context.status();
  auto channel = Channel::create(*context, testing::testChannelOptions(1000));
  ASSERT_TRUE(channel.ok()) << channel.status();
  ASSERT_TRUE(stopped.waitStopped(std::chrono::seconds(20)));
  if (woken_before) {
    Frame frame;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    const absl::Status s = (*channel)->receive(std::vector<int>{1}, &frame, until);
    ASSERT_TRUE(absl::IsDeadlineExceeded(s)) << s;
    stopped.killNow();
    for (int i = 0; i < 1000 && (*channel)->isLive(1); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_FALSE((*channel)->isLive(1));
  }
  std::atomic<bool> done{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stopped.killNow();
    for (int i = 0; i < 200 && !done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!done) (*channel)->interrupt();  // never hang: the test then fails on Cancelled
  });
  const absl::Cleanup join = [&] {
    done = true;
    killer.join();
  };
  auto death = (*channel)->receive(std::vector<int>{1});
  ASSERT_TRUE(death.ok()) << death.status();
  EXPECT_EQ(death->src, 1);
  EXPECT_TRUE(absl::IsUnavailable(death->peer_status)) << death->peer_status;
  (*channel)->drop(1, "died");
  int data = 0, shutdowns = 0;
  while (data + shutdowns < 4) {
    auto m = (*channel)->receive(std::vector<int>{2});
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_EQ(m->src, 2);
    if (m->peer_status.ok()) {
      EXPECT_EQ(testing::payloadOf(*m), std::vector<uint8_t>(1000, 2));
      ++data;
    } else {
      EXPECT_EQ(m->peer_status.message(), "channel: rank 2 closed its connection");
      ++shutdowns;
    }
  }
  EXPECT_EQ(data, 3);
  EXPECT_EQ(shutdowns, 1);
  EXPECT_EQ(sender.wait(std::chrono::seconds(10)), 0);
}

TEST(DeadPeer, APeerThatDiesMidMessageLeavesTheReceivesFromTheOthersWorking) {
  dieMidMessage(/*woken_before=*/false);
}

TEST(DeadPeer, APeerThatDiesUnderAReceiveWokenEarlierLeavesTheReceivesFromTheOthersWorking) {
  dieMidMessage(/*woken_before=*/true);
}

TEST(DeadPeer, ASendToADeadPeerFailsNamingIt) {
  const testing::TempDir store("sparseps_transport_");
  const std::string dir = store.str();
  testing::ChildProcess hanging(peerArgs(dir, 1, 2, "hang"));
  ASSERT_TRUE(hanging.started());
  auto context = connectWithFileStore(testing::loopbackOptions(dir, 0, 2).setRunId("dead"));
  ASSERT_TRUE(context.ok()) << context.status();
  auto channel = Channel::create(*context, testing::testChannelOptions(1000));
  ASSERT_TRUE(channel.ok());
  hanging.killNow();
  std::vector<uint8_t> payload(10);
  // The send blocks until rank 1's death is seen on its connection.
  absl::Status s = (*channel)->send(1, testing::testMessage(10, payload));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 1"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace sparseps

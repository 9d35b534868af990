#include "transport/rendezvous.h"

#include <gloo/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "tests/transport/mesh.h"

namespace sparseps {
namespace {

TEST(RendezvousOptions, ValidateNamesTheField) {
  RendezvousOptions good = RendezvousOptions().setRank(1).setWorldSize(2).setRunId("r");
  EXPECT_TRUE(good.validate().ok());
  EXPECT_NE(RendezvousOptions(good).setWorldSize(0).validate().message().find("world_size"),
            absl::string_view::npos);
  EXPECT_NE(RendezvousOptions(good).setRank(2).validate().message().find("rank"),
            absl::string_view::npos);
  EXPECT_NE(RendezvousOptions(good).setRunId("").validate().message().find("run_id"),
            absl::string_view::npos);
  RendezvousOptions both = good;
  both.iface = "lo";
  EXPECT_NE(both.validate().message().find("exactly one"), absl::string_view::npos);
}

// A dead job's keys stay in the store directory; a new run with its own prefix connects
// regardless and never sees them.
TEST(Rendezvous, StaleKeysOfAnotherRunDoNotInterfere) {
  const testing::TempDir store("sparseps_transport_");
  const std::string dir = store.str();
  {
    gloo::rendezvous::FileStore store(dir);
    // What rank 1 of a dead run "old" left behind.
    store.set("old/rank_1", std::vector<char>(64, 'x'));
  }
  std::shared_ptr<gloo::Context> contexts[2];
  std::thread t([&] {
    auto c = connectWithFileStore(testing::loopbackOptions(dir, 1, 2).setRunId("new"));
    ASSERT_TRUE(c.ok()) << c.status();
    contexts[1] = *c;
  });
  auto c = connectWithFileStore(testing::loopbackOptions(dir, 0, 2).setRunId("new"));
  t.join();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->size, 2);
}

TEST(Rendezvous, MissingPeerIsAnErrorNotAHang) {
  const testing::TempDir store("sparseps_transport_");
  const std::string dir = store.str();
  auto c =
      connectWithFileStore(testing::loopbackOptions(dir, 0, 2).setRunId("alone").setConnectTimeout(
          std::chrono::milliseconds(500)));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("could not connect"), absl::string_view::npos) << c.status();
}

// A rank that names its peers connects to those that come and, where missing peers are
// allowed, names the one that never came instead of failing; a rank that needs it fails.
TEST(Rendezvous, APeerThatNeverComesIsNamedNotWaitedOnForever) {
  const testing::TempDir store("sparseps_transport_");
  const std::string dir = store.str();
  constexpr auto kTimeout = std::chrono::milliseconds(800);
  auto options = [&](int rank) {
    return testing::loopbackOptions(dir, rank, 4).setRunId("partial").setConnectTimeout(kTimeout);
  };
  // Rank 0 serves ranks 1-3; rank 3 never starts. Rank 1 also needs rank 3 (and fails).
  absl::StatusOr<Mesh> worker2, worker1;
  std::thread t2([&] { worker2 = connectPeers(options(2).setPeers({0}, false), nullptr); });
  std::thread t1([&] { worker1 = connectPeers(options(1).setPeers({0, 3}, false), nullptr); });
  const auto start = std::chrono::steady_clock::now();
  auto server = connectPeers(options(0).setPeers({1, 2, 3}, true), nullptr);
  const auto took = std::chrono::steady_clock::now() - start;
  t1.join();
  t2.join();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(worker2.ok()) << worker2.status();
  EXPECT_TRUE(worker2->missing.empty());
  ASSERT_EQ(server->missing.size(), 1u);
  EXPECT_NE(server->missing.at(3).find("did not join within the connect timeout"),
            std::string::npos)
      << server->missing.at(3);
  EXPECT_NE(server->context->getPair(1), nullptr);
  EXPECT_NE(server->context->getPair(2), nullptr);
  EXPECT_EQ(server->context->getPair(3), nullptr);
  EXPECT_LT(took, 5 * kTimeout);
  ASSERT_FALSE(worker1.ok());
  EXPECT_NE(worker1.status().message().find("rank 3 did not join"), absl::string_view::npos)
      << worker1.status();
}

// A KeyValueStore in memory, shared by ranks running as threads; counts its calls.
class MemoryStore final : public KeyValueStore {
 public:
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    values_[key] = value;
    ++sets_;
    changed_.notify_all();
  }
  std::vector<uint8_t> get(const std::string& key) override {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return values_.count(key) > 0; });
    return values_[key];
  }
  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& k : keys) {
      if (values_.count(k) == 0) return false;
    }
    return true;
  }
  int sets() {
    std::lock_guard<std::mutex> lock(mu_);
    return sets_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<uint8_t>> values_;
  int sets_ = 0;
};

// The connect timeout bounds the whole connect, even over a store whose reads wait
// without a limit (MemoryStore::get): rank 1's peer never comes.
TEST(Rendezvous, TheConnectTimeoutBoundsEveryWait) {
  MemoryStore store;
  const auto start = std::chrono::steady_clock::now();
  auto c = connectFullMesh(RendezvousOptions().setRank(1).setWorldSize(2).setRunId("late")
                               .setConnectTimeout(std::chrono::milliseconds(500)),
                           store);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("could not connect"), absl::string_view::npos) << c.status();
  EXPECT_GE(took, 0.45);
  EXPECT_LT(took, 5.0);
}

RendezvousOptions storeOptions(int rank) {
  return RendezvousOptions().setRank(rank).setWorldSize(2).setRunId("kv").setConnectTimeout(
      std::chrono::seconds(20));
}

// connectFullMesh works over any KeyValueStore: a store from outside transport/ (the
// TCP store of core/torch/tcp_store.h) never sees a Gloo type.
TEST(Rendezvous, ConnectsThroughAnyKeyValueStore) {
  MemoryStore store;
  std::shared_ptr<gloo::Context> contexts[2];
  std::thread peer([&] {
    auto c = connectFullMesh(storeOptions(1), store);
    ASSERT_TRUE(c.ok()) << c.status();
    contexts[1] = *c;
  });
  auto c = connectFullMesh(storeOptions(0), store);
  peer.join();
  ASSERT_TRUE(c.ok()) << c.status();
  contexts[0] = *c;
  ASSERT_TRUE(contexts[1]);
  EXPECT_EQ(contexts[0]->rank, 0);
  EXPECT_EQ(contexts[1]->rank, 1);
  EXPECT_EQ(contexts[1]->size, 2);
  EXPECT_GE(store.sets(), 2);  // each rank published its address through the store
}

// A store whose wait times out is an error naming the rank, not a hang or a crash.
TEST(Rendezvous, AKeyValueStoreTimeoutIsAnError) {
  MemoryStore store;
  auto c = connectFullMesh(storeOptions(0).setConnectTimeout(std::chrono::milliseconds(300)), store);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("rank 0 of 2"), absl::string_view::npos) << c.status();
}

}  // namespace
}  // namespace sparseps

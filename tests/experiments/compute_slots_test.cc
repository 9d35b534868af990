#include "experiments/driver/compute_slots.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/temp_dir.h"

namespace sparseps {
namespace {

// Separate ComputeSlots objects stand for separate worker processes: flock(2) locks of
// separate open file descriptions exclude each other even inside one process.
TEST(ComputeSlots, ASecondWorkerWaitsUntilTheSlotIsFree) {
  testing::TempDir dir("sparseps_slots_");
  auto a = ComputeSlots::open(dir.str(), 1);
  auto b = ComputeSlots::open(dir.str(), 1);
  ASSERT_TRUE(a.ok() && b.ok());
  std::optional<ComputeSlots::Held> held(a->acquire());
  std::atomic<bool> got{false};
  std::thread other([&] {
    ComputeSlots::Held slot = b->acquire();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got) << "the only slot was taken twice";
  held.reset();
  other.join();
  EXPECT_TRUE(got);
}

// A holder that never gives its slot back (a stopped worker) holds up nobody while another
// slot frees: the waiting worker takes that one.
TEST(ComputeSlots, AWaitingWorkerTakesWhicheverSlotFrees) {
  testing::TempDir dir("sparseps_slots_");
  auto stopped = ComputeSlots::open(dir.str(), 2);
  auto busy = ComputeSlots::open(dir.str(), 2);
  auto waiting = ComputeSlots::open(dir.str(), 2);
  ASSERT_TRUE(stopped.ok() && busy.ok() && waiting.ok());
  std::optional<ComputeSlots::Held> forever = stopped->tryAcquire();  // slot 0, for good
  std::optional<ComputeSlots::Held> pass = busy->tryAcquire();        // slot 1
  ASSERT_TRUE(forever.has_value() && pass.has_value());
  std::atomic<bool> got{false};
  std::thread other([&] {
    ComputeSlots::Held slot = waiting->acquire();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got);
  pass.reset();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!got && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(got) << "the worker waited on the slot that is never given back";
  other.join();
}

TEST(ComputeSlots, AsManyAsSlotsAtOnce) {
  testing::TempDir dir("sparseps_slots_");
  auto a = ComputeSlots::open(dir.str(), 2);
  auto b = ComputeSlots::open(dir.str(), 2);
  auto c = ComputeSlots::open(dir.str(), 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::optional<ComputeSlots::Held> first = a->tryAcquire();
  std::optional<ComputeSlots::Held> second = b->tryAcquire();
  EXPECT_TRUE(first.has_value());
  EXPECT_TRUE(second.has_value());
  EXPECT_FALSE(c->tryAcquire().has_value()) << "a third worker got one of two slots";
  second.reset();
  EXPECT_TRUE(c->tryAcquire().has_value());
}

TEST(ComputeSlots, AHeldSlotPinsTheThreadToItsOwnCoreUntilReleased) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  std::vector<int> allowed;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &before)) allowed.push_back(cpu);
  }
  if (allowed.size() < 2) GTEST_SKIP() << "needs two cores";
  testing::TempDir dir("sparseps_slots_");
  auto a = ComputeSlots::open(dir.str(), 2);
  auto b = ComputeSlots::open(dir.str(), 2);
  ASSERT_TRUE(a.ok() && b.ok());
  std::optional<ComputeSlots::Held> first = a->tryAcquire();
  ASSERT_TRUE(first.has_value());
  std::thread other([&] {
    // The second slot runs on the second allowed core, and only there.
    std::optional<ComputeSlots::Held> second = b->tryAcquire();
    ASSERT_TRUE(second.has_value());
    cpu_set_t now;
    ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
    EXPECT_EQ(CPU_COUNT(&now), 1);
    EXPECT_TRUE(CPU_ISSET(allowed[1], &now));
  });
  other.join();
  cpu_set_t now;
  ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
  EXPECT_EQ(CPU_COUNT(&now), 1);
  EXPECT_TRUE(CPU_ISSET(allowed[0], &now));
  first.reset();
  ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
  EXPECT_TRUE(CPU_EQUAL(&now, &before)) << "the earlier core mask did not come back";
}

TEST(ComputeSlots, NeedsAtLeastOneSlot) {
  testing::TempDir dir("sparseps_slots_");
  EXPECT_FALSE(ComputeSlots::open(dir.str(), 0).ok());
}

}  // namespace
}  // namespace sparseps

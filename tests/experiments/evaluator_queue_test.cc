// The evaluator's queue when evaluation falls behind training: bounded, newest kept, the
// final snapshot never skipped.
#include <gtest/gtest.h>

#include <deque>
#include <vector>

#include "experiments/driver/evaluator.h"

namespace sparseps {
namespace {

Snapshot snap(uint64_t index, bool final = false) {
  Snapshot s;
  s.index = index;
  s.final = final;
  s.params.assign(1000, 1.0f);
  return s;
}

std::vector<uint64_t> indices(const std::deque<Snapshot>& q) {
  std::vector<uint64_t> out;
  for (const Snapshot& s : q) out.push_back(s.index);
  return out;
}

TEST(EvaluatorQueueTest, HoldsTheNewestAndSkipsTheOldest) {
  std::deque<Snapshot> waiting;
  std::vector<uint64_t> dropped;
  for (uint64_t i = 1; i <= 50; ++i) {  // fifty epochs end while one evaluation runs
    waiting.push_back(snap(i));
    for (const Snapshot& s : dropBehind(&waiting, 2)) dropped.push_back(s.index);
    ASSERT_LE(waiting.size(), 2u);
  }
  EXPECT_EQ(indices(waiting), (std::vector<uint64_t>{49, 50}));
  ASSERT_EQ(dropped.size(), 48u);
  for (uint64_t i = 0; i < 48; ++i) EXPECT_EQ(dropped[i], i + 1);
}

TEST(EvaluatorQueueTest, NeverSkipsTheFinalSnapshot) {
  std::deque<Snapshot> waiting;
  waiting.push_back(snap(7));
  waiting.push_back(snap(8, /*final=*/true));
  waiting.push_back(snap(9));
  EXPECT_EQ(dropBehind(&waiting, 1).size(), 2u);
  EXPECT_EQ(indices(waiting), std::vector<uint64_t>{8});
  EXPECT_TRUE(waiting.front().final);
  waiting.push_back(snap(10, /*final=*/true));
  EXPECT_TRUE(dropBehind(&waiting, 1).empty());  // only finals left: nothing to skip
  EXPECT_EQ(waiting.size(), 2u);
}

}  // namespace
}  // namespace sparseps

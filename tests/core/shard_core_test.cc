#include "core/runtime/shard_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace sparseps {
namespace {

// W = W - scale * p over dense segments; replies with the dense W. Counts pushes as state.
class PlainRule : public ServerRule {
 public:
  void applyPush(int, const Message& push, float scale, absl::Span<float> W) override {
    for (const auto& s : push) {
      for (size_t i = 0; i < s.values.size(); ++i) W[i] -= scale * s.values[i];
    }
    ++applied_;
  }
  void makeReply(int, absl::Span<const float> W, Message* reply) override {
    SegmentData s;
    s.numel = static_cast<uint32_t>(W.size());
    s.dense = true;
    s.values.assign(W.begin(), W.end());
    reply->assign(1, s);
  }
  void useThreads(TaskRunner* runner) override { runner_ = runner; }
  std::string saveState() const override { return std::to_string(applied_); }
  absl::Status loadState(const std::string& bytes) override {
    applied_ = std::stoi(bytes);
    return absl::OkStatus();
  }
  int applied_ = 0;
  TaskRunner* runner_ = nullptr;
};

Message densePush(std::vector<float> v) {
  SegmentData s;
  s.numel = static_cast<uint32_t>(v.size());
  s.dense = true;
  s.values = std::move(v);
  return {s};
}

ShardCoreOptions optionsFor(ConsistencyMode mode, int staleness = 0) {
  ShardCoreOptions o;
  o.mode = mode;
  o.staleness = staleness;
  o.lr = LrSchedule{0.1, {1.0}, 0.1, 0};
  o.pushes_per_epoch = 4;
  return o;
}

ShardCore makeCore(ConsistencyMode mode, int workers, int staleness = 0) {
  return ShardCore(std::make_unique<PlainRule>(), {10.0f, 20.0f}, 0, workers,
                    optionsFor(mode, staleness));
}

TEST(ShardCoreTest, AsyncAppliesAndAnswersEachPushAlone) {
  auto core = makeCore(ConsistencyMode::kAsync, 2);
  std::vector<Reply> out;
  core.onPush(1, densePush({1, 2}), &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].worker, 1);
  EXPECT_EQ(out[0].version, 1u);
  EXPECT_EQ(out[0].segments[0].values, (std::vector<float>{9, 18}));
  core.onPush(0, densePush({1, 1}), &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].worker, 0);
  EXPECT_EQ(out[1].segments[0].values, (std::vector<float>{8, 17}));
}

TEST(ShardCoreTest, ServerThreadsGiveTheRuleARunnerOfThatMany) {
  for (int threads : {1, 3}) {
    ShardCoreOptions o = optionsFor(ConsistencyMode::kAsync);
    o.threads = threads;
    auto rule = std::make_unique<PlainRule>();
    PlainRule* seen = rule.get();
    ShardCore core(std::move(rule), {10.0f, 20.0f}, 0, 1, o);
    if (threads == 1) {
      EXPECT_EQ(seen->runner_, nullptr);  // no pool for one thread
    } else {
      ASSERT_NE(seen->runner_, nullptr);
      EXPECT_EQ(seen->runner_->threads(), threads);
    }
  }
}

TEST(ShardCoreTest, ServerThreadsOutsideTheirRangeAreRefusedNamingIt) {
  for (int threads : {0, -2, kMaxServerThreads + 1}) {
    ShardCoreOptions o = optionsFor(ConsistencyMode::kAsync);
    o.threads = threads;
    const absl::Status s = o.validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("server_threads"), std::string::npos) << s;
  }
  ShardCoreOptions o = optionsFor(ConsistencyMode::kAsync);
  o.threads = kMaxServerThreads;
  EXPECT_TRUE(o.validate().ok());
}

// A push states how many of its worker's pushes came before it: a replay or a reordering
// states a step already applied (or not yet due), and a second push while the first is
// unanswered (a sync round, a held reply) is out of turn. The rule follows each push.
TEST(ShardCoreTest, APushOutOfItsWorkersTurnIsRefusedNamingBothSteps) {
  auto async = makeCore(ConsistencyMode::kAsync, 2);
  std::vector<Reply> out;
  ASSERT_TRUE(async.acceptPush(0, 0, 1.0f).ok());
  async.onPush(0, densePush({1, 1}), &out);
  ASSERT_TRUE(async.acceptPush(0, 1, 1.0f).ok());
  absl::Status replay = async.acceptPush(0, 0, 1.0f);
  EXPECT_TRUE(absl::IsInvalidArgument(replay));
  EXPECT_EQ(replay.message(), "push of its step 0 where step 1 is next (a replayed or reordered push)");
  EXPECT_FALSE(async.acceptPush(0, 2, 1.0f).ok());  // one from the future
  EXPECT_TRUE(async.acceptPush(1, 0, 1.0f).ok());   // each worker counts its own
  EXPECT_EQ(async.pushes(), 1u);

  auto sync = makeCore(ConsistencyMode::kSync, 2);
  sync.onPush(0, densePush({1, 1}), &out);  // the round waits for worker 1
  absl::Status again = sync.acceptPush(0, 0, 1.0f);
  EXPECT_EQ(again.message(),
            "push of its step 0 while its push of step 0 is unanswered (a replayed or "
            "out-of-turn push)");
  sync.onPush(1, densePush({1, 1}), &out);  // the round is answered
  EXPECT_TRUE(sync.acceptPush(0, 1, 1.0f).ok());
  EXPECT_FALSE(sync.acceptPush(0, 0, 1.0f).ok());

  auto stale = makeCore(ConsistencyMode::kStaleness, 2, /*staleness=*/0);
  stale.onPush(0, densePush({1, 1}), &out);  // applied, its reply held for worker 1
  EXPECT_FALSE(stale.acceptPush(0, 1, 1.0f).ok()) << "the held reply is not answered yet";
  stale.onPush(1, densePush({1, 1}), &out);
  EXPECT_TRUE(stale.acceptPush(0, 1, 1.0f).ok());
}

// The poisoning guard against a plain statement of its rule: after 8 accepted pushes, one
// whose largest value is over 1e4 times the median (the middle of the sorted window, upper
// middle for an even count) of the last 64 accepted pushes' largest values, or over 1e4 *
// 0.01 when that median is smaller, is refused. The series: a warm-up (even a huge push
// passes there), a slow honest drift the window follows, a 100x spike, 1e18 pushes, a
// converged tail of tiny pushes with a stale worker's 5e-3 and 99 among them, then 101.
TEST(ShardCoreTest, APushFarAboveTheRecentPushesIsRefused) {
  std::vector<float> series = {1, 2, 1e18f, 0.5f, 1, 1, 1, 1};  // the warm-up: all pass
  for (int i = 0; i < 100; ++i) series.push_back(1.0f + 0.05f * static_cast<float>(i));
  series.push_back(100.0f * series.back());
  for (int i = 0; i < 3; ++i) series.push_back(1e18f);
  for (int i = 0; i < 70; ++i) series.push_back(i % 20 == 0 ? 5e-3f : 7e-8f);
  series.push_back(99.0f);   // under the floor's bound
  series.push_back(101.0f);  // over it
  auto core = makeCore(ConsistencyMode::kAsync, 1);
  std::vector<float> accepted;
  int refusals = 0;
  for (size_t i = 0; i < series.size(); ++i) {
    bool refuse = false;
    if (accepted.size() >= 8) {
      std::vector<float> window(accepted.end() - std::min<ptrdiff_t>(64, accepted.size()),
                                accepted.end());
      std::sort(window.begin(), window.end());
      refuse = series[i] > 1e4 * std::max(window[window.size() / 2], 0.01f);
    }
    const absl::Status s = core.acceptPush(0, 0, series[i]);
    ASSERT_EQ(s.ok(), !refuse) << "push " << i << " of " << series[i] << ": " << s;
    if (refuse) {
      ++refusals;
      EXPECT_NE(s.message().find("is over 10000 times the median largest value"),
                std::string::npos)
          << s;
    } else {
      accepted.push_back(series[i]);
    }
  }
  EXPECT_EQ(refusals, 4);  // the three 1e18 pushes after the warm-up and 101, nothing honest
}

TEST(ShardCoreTest, LearningRateFollowsTheEpochOfPushesApplied) {
  auto core = makeCore(ConsistencyMode::kAsync, 1);
  std::vector<Reply> out;
  for (int i = 0; i < 4; ++i) core.onPush(0, densePush({0, 0}), &out);
  EXPECT_FLOAT_EQ(out[2].lr, 0.1f);   // after 3 pushes: epoch 0.75
  EXPECT_NEAR(out[3].lr, 0.01f, 1e-7);  // after 4 pushes: epoch 1, past the milestone
}

TEST(ShardCoreTest, SyncAveragesAFullRoundThenAnswersAll) {
  auto core = makeCore(ConsistencyMode::kSync, 3);
  std::vector<Reply> out;
  core.onPush(0, densePush({3, 0}), &out);
  core.onPush(2, densePush({0, 3}), &out);
  EXPECT_TRUE(out.empty());
  core.onPush(1, densePush({3, 3}), &out);
  ASSERT_EQ(out.size(), 3u);
  for (const auto& r : out) {
    EXPECT_EQ(r.version, 1u);
    EXPECT_EQ(r.segments[0].values, (std::vector<float>{8, 18}));
  }
}

TEST(ShardCoreTest, SyncGoesOnWithSurvivorsWhenAWorkerIsLost) {
  std::string logged;
  auto options = optionsFor(ConsistencyMode::kSync);
  options.log = [&](const std::string& line) { logged += line; };
  ShardCore core(std::make_unique<PlainRule>(), {10.0f, 20.0f}, 0, 3, options);
  std::vector<Reply> out;
  core.onPush(0, densePush({2, 2}), &out);
  core.onPush(1, densePush({4, 4}), &out);
  core.onWorkerLost(2, &out);
  ASSERT_EQ(out.size(), 2u);  // the round completes with the two survivors
  EXPECT_EQ(out[0].segments[0].values, (std::vector<float>{7, 17}));
  EXPECT_NE(logged.find("worker 2"), std::string::npos);
  EXPECT_EQ(core.liveWorkers(), 2);
}

TEST(ShardCoreTest, StalenessHoldsAWorkerTooFarAhead) {
  auto core = makeCore(ConsistencyMode::kStaleness, 3, /*staleness=*/1);
  std::vector<Reply> out;
  core.onPush(0, densePush({1, 0}), &out);  // steps 1,0,0: within the bound
  ASSERT_EQ(out.size(), 1u);
  core.onPush(0, densePush({1, 0}), &out);  // steps 2,0,0: held
  EXPECT_EQ(out.size(), 1u);
  core.onPush(1, densePush({0, 1}), &out);  // steps 2,1,0: worker 1 answered, 0 still held
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].worker, 1);
  core.onPush(2, densePush({0, 1}), &out);  // steps 2,1,1: 0 released first (held longest), then 2
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[2].worker, 0);
  EXPECT_EQ(out[2].segments[0].values, (std::vector<float>{8, 18}));
  EXPECT_EQ(out[3].worker, 2);
}

TEST(ShardCoreTest, StalenessReleasesWhenTheSlowestWorkerFinishes) {
  auto core = makeCore(ConsistencyMode::kStaleness, 2, /*staleness=*/0);
  std::vector<Reply> out;
  core.onPush(0, densePush({1, 1}), &out);
  EXPECT_TRUE(out.empty());
  core.onWorkerDone(1, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].worker, 0);
}

// Who a held reply waits for: the server loop drops exactly these at the peer timeout.
TEST(ShardCoreTest, WaitingOnNamesTheWorkersAHeldReplyNeeds) {
  std::vector<Reply> out;
  auto async = makeCore(ConsistencyMode::kAsync, 3);
  async.onPush(0, densePush({1, 1}), &out);
  EXPECT_TRUE(async.waitingOn().empty());

  auto sync = makeCore(ConsistencyMode::kSync, 3);
  EXPECT_TRUE(sync.waitingOn().empty());  // no round open
  sync.onPush(1, densePush({1, 1}), &out);
  EXPECT_EQ(sync.waitingOn(), (std::vector<int>{0, 2}));
  sync.onWorkerLost(2, &out);
  EXPECT_EQ(sync.waitingOn(), (std::vector<int>{0}));
  out.clear();
  sync.onPush(0, densePush({1, 1}), &out);
  EXPECT_EQ(out.size(), 2u);  // the round closed
  EXPECT_TRUE(sync.waitingOn().empty());

  // Bound 1: worker 0 at step 3 is held while workers 1 (step 1) and 2 (step 0) are more
  // than one step behind; worker 1 at step 2 would not hold it.
  auto stale = makeCore(ConsistencyMode::kStaleness, 3, /*staleness=*/1);
  for (int i = 0; i < 3; ++i) stale.onPush(0, densePush({1, 1}), &out);
  stale.onPush(1, densePush({1, 1}), &out);
  EXPECT_EQ(stale.waitingOn(), (std::vector<int>{1, 2}));
  stale.onPush(1, densePush({1, 1}), &out);
  EXPECT_EQ(stale.waitingOn(), (std::vector<int>{2}));
}

TEST(ShardCoreTest, FinishedOnceEveryWorkerIsDoneOrLost) {
  auto core = makeCore(ConsistencyMode::kAsync, 2);
  std::vector<Reply> out;
  core.onWorkerDone(0, &out);
  EXPECT_FALSE(core.finished());
  core.onWorkerLost(1, &out);
  EXPECT_TRUE(core.finished());
  core.onPush(1, densePush({5, 5}), &out);  // late message of a dropped worker is ignored
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(core.model(), (std::vector<float>{10, 20}));
}

// Snapshots every 0.5 epochs (2 pushes of the 4 per epoch), in async and in sync mode, and
// one more when the last worker leaves; each sees the model of exactly the pushes so far.
TEST(ShardCoreTest, SnapshotsFollowTheGlobalEpochAndCloseWithTheFinalModel) {
  for (ConsistencyMode mode : {ConsistencyMode::kAsync, ConsistencyMode::kSync}) {
    SCOPED_TRACE(mode == ConsistencyMode::kAsync ? "async" : "sync");
    struct Seen {
      double epoch;
      uint64_t pushes;
      std::vector<float> model;
      bool finished;
    };
    std::vector<Seen> seen;
    ShardCoreOptions o = optionsFor(mode);
    o.snapshot_every = 0.5;
    o.on_snapshot = [&](const ShardCore& core) {
      seen.push_back({core.epoch(), core.pushes(), core.model(), core.finished()});
    };
    ShardCore core(std::make_unique<PlainRule>(), {10.0f, 20.0f}, 0, 2, o);
    std::vector<Reply> out;
    for (int round = 0; round < 3; ++round) {  // 6 pushes of {1, 1}: 1.5 epochs
      core.onPush(0, densePush({1, 1}), &out);
      core.onPush(1, densePush({1, 1}), &out);
    }
    core.onWorkerDone(0, &out);
    core.onWorkerDone(1, &out);
    // Sync averages each round's pushes (scale 1/2): W drops by 1 per round, async by 2.
    const float per_round = mode == ConsistencyMode::kSync ? 1.0f : 2.0f;
    ASSERT_EQ(seen.size(), 4u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_DOUBLE_EQ(seen[i].epoch, 0.5 * static_cast<double>(i + 1));
      EXPECT_EQ(seen[i].pushes, 2 * (i + 1));
      EXPECT_EQ(seen[i].model,
                (std::vector<float>{10.0f - per_round * static_cast<float>(i + 1),
                                    20.0f - per_round * static_cast<float>(i + 1)}));
      EXPECT_FALSE(seen[i].finished);
    }
    EXPECT_TRUE(seen[3].finished);
    EXPECT_DOUBLE_EQ(seen[3].epoch, 1.5);
    EXPECT_EQ(seen[3].model, seen[2].model);
  }
}

TEST(ShardCoreTest, BuffersAreAveragedOverWorkersThatSentThem) {
  ShardCore core(std::make_unique<PlainRule>(), {0.0f}, 2, 3, optionsFor(ConsistencyMode::kAsync));
  core.onBuffers(0, {1, 2});
  core.onBuffers(2, {3, 6});
  core.onBuffers(1, {100});  // wrong size: ignored
  EXPECT_EQ(core.averagedBuffers(), (std::vector<float>{2, 4}));
}

// A received segment: its values owned or borrowed from the message bytes; one that is not
// dense or not of the buffers' size is ignored.
TEST(ShardCoreTest, BuffersFromAReceivedSegmentAreCopied) {
  ShardCore core(std::make_unique<PlainRule>(), {0.0f}, 2, 3, optionsFor(ConsistencyMode::kAsync));
  SegmentData owned;
  owned.dense = true;
  owned.numel = 2;
  owned.values = {1, 2};
  core.onBuffers(0, owned);
  std::vector<float> message = {3, 6};  // the bytes a borrowing decoder points at
  SegmentData borrowed;
  borrowed.dense = true;
  borrowed.numel = 2;
  borrowed.borrowed = reinterpret_cast<const uint8_t*>(message.data());
  core.onBuffers(2, borrowed);
  message = {-1, -1};  // the receive buffer is reused: the core kept its own copy
  SegmentData sparse;
  sparse.numel = 2;
  sparse.indices = {0, 1};
  sparse.values = {100, 100};
  core.onBuffers(1, sparse);
  SegmentData wrong_size = owned;
  wrong_size.numel = 1;
  wrong_size.values = {100};
  core.onBuffers(1, wrong_size);
  EXPECT_EQ(core.averagedBuffers(), (std::vector<float>{2, 4}));
}

TEST(ShardCoreTest, CheckpointRestoresModelCountersAndRuleState) {
  auto core = makeCore(ConsistencyMode::kAsync, 2);
  std::vector<Reply> out;
  core.onPush(0, densePush({1, 1}), &out);
  core.onPush(1, densePush({1, 1}), &out);
  const auto saved = core.checkpoint(42);
  EXPECT_EQ(saved.method_state, "2");

  auto resumed = makeCore(ConsistencyMode::kAsync, 2);
  ASSERT_TRUE(resumed.restore(saved).ok());
  EXPECT_EQ(resumed.model(), core.model());
  EXPECT_EQ(resumed.version(), 2u);
  EXPECT_EQ(resumed.pushes(), 2u);

  auto other = ShardCore(std::make_unique<PlainRule>(), {0.0f}, 0, 2,
                          optionsFor(ConsistencyMode::kAsync));
  auto status = other.restore(saved);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("parameters"), std::string::npos);
}

}  // namespace
}  // namespace sparseps

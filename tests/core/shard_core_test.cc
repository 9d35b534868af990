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
  ASSERT_TRUE(async.acceptPush(0, 0, 1.0f, 2.0, densePush({1, 1})).ok());
  async.onPush(0, densePush({1, 1}), &out);
  ASSERT_TRUE(async.acceptPush(0, 1, 1.0f, 2.0, densePush({1, 1})).ok());
  absl::Status replay = async.acceptPush(0, 0, 1.0f, 2.0, densePush({1, 1}));
  EXPECT_TRUE(absl::IsInvalidArgument(replay));
  EXPECT_EQ(replay.message(), "push of its step 0 where step 1 is next (a replayed or reordered push)");
  EXPECT_FALSE(async.acceptPush(0, 2, 1.0f, 2.0, densePush({1, 1})).ok());  // one from the future
  EXPECT_TRUE(async.acceptPush(1, 0, 1.0f, 2.0, densePush({1, 1})).ok());   // each worker counts its own
  EXPECT_EQ(async.pushes(), 1u);

  auto sync = makeCore(ConsistencyMode::kSync, 2);
  sync.onPush(0, densePush({1, 1}), &out);  // the round waits for worker 1
  absl::Status again = sync.acceptPush(0, 0, 1.0f, 2.0, densePush({1, 1}));
  EXPECT_EQ(again.message(),
            "push of its step 0 while its push of step 0 is unanswered (a replayed or "
            "out-of-turn push)");
  sync.onPush(1, densePush({1, 1}), &out);  // the round is answered
  EXPECT_TRUE(sync.acceptPush(0, 1, 1.0f, 2.0, densePush({1, 1})).ok());
  EXPECT_FALSE(sync.acceptPush(0, 0, 1.0f, 2.0, densePush({1, 1})).ok());

  auto stale = makeCore(ConsistencyMode::kStaleness, 2, /*staleness=*/0);
  stale.onPush(0, densePush({1, 1}), &out);  // applied, its reply held for worker 1
  EXPECT_FALSE(stale.acceptPush(0, 1, 1.0f, 2.0, densePush({1, 1})).ok()) << "the held reply is not answered yet";
  stale.onPush(1, densePush({1, 1}), &out);
  EXPECT_TRUE(stale.acceptPush(0, 1, 1.0f, 2.0, densePush({1, 1})).ok());
}

// Pushes its largest value's worth on both parameters, accepted first (as the session does).
absl::Status acceptAndPush(ShardCore& core, int worker, float value, std::vector<Reply>* out) {
  Message push = densePush({value, value});
  if (absl::Status s = core.acceptPush(worker, core.workerSteps(worker), value,
                                       2.0 * value * value, push);
      !s.ok()) {
    return s;
  }
  core.onPush(worker, push, out);
  return absl::OkStatus();
}

// The clip rule's frequency filter in async mode: a worker more than 16 steps ahead of the
// median worker (lost workers not counted) gets its reply only when the others catch up, or
// when no other worker could still push.
TEST(ShardCoreTest, AsyncHoldsAWorkerFarAheadOfTheMedianWorker) {
  ShardCore core(std::make_unique<PlainRule>(), {0.0f, 0.0f}, 0, 3,
                 optionsFor(ConsistencyMode::kAsync));
  std::vector<Reply> out;
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(acceptAndPush(core, 0, 0.01f, &out).ok());
  EXPECT_EQ(out.size(), 16u) << "16 ahead of the median (0) is within the lead";
  ASSERT_TRUE(acceptAndPush(core, 0, 0.01f, &out).ok());
  EXPECT_EQ(out.size(), 16u) << "the 17th step's reply waits";
  EXPECT_TRUE(core.awaitsReply(0));
  EXPECT_TRUE(core.waitingOn().empty()) << "a slow worker is not held responsible";
  ASSERT_TRUE(acceptAndPush(core, 2, 0.01f, &out).ok());  // median 1: 17 <= 1 + 16
  ASSERT_EQ(out.size(), 18u);
  EXPECT_EQ(out[16].worker, 0);
  EXPECT_EQ(out[17].worker, 2);
  // With the others done, nobody can catch up: the held reply goes.
  ShardCore alone(std::make_unique<PlainRule>(), {0.0f, 0.0f}, 0, 3,
                  optionsFor(ConsistencyMode::kAsync));
  std::vector<Reply> replies;
  for (int i = 0; i < 17; ++i) ASSERT_TRUE(acceptAndPush(alone, 0, 0.01f, &replies).ok());
  alone.onWorkerDone(1, &replies);
  EXPECT_EQ(replies.size(), 16u);
  alone.onWorkerDone(2, &replies);
  EXPECT_EQ(replies.size(), 17u);
  // ... and its next push, 17 steps beyond the finished workers' 0, is refused.
  const absl::Status beyond = acceptAndPush(alone, 0, 0.01f, &replies);
  EXPECT_EQ(beyond.message(),
            "push of its step 17, more than 16 steps beyond the 0 of the workers that finished");
  // The refuse rule keeps neither.
  ShardCoreOptions refuse = optionsFor(ConsistencyMode::kAsync);
  refuse.guard = PushGuardRule::kRefuse;
  ShardCore free(std::make_unique<PlainRule>(), {0.0f, 0.0f}, 0, 3, refuse);
  std::vector<Reply> all;
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(acceptAndPush(free, 0, 0.01f, &all).ok());
  EXPECT_EQ(all.size(), 40u);
}

// A clipped push reaches the rule scaled: worker 1's norm is sqrt(2) * 1, so worker 0's push
// of norm sqrt(2) * 100 is applied at 2 / 100 of itself, in async and within a sync round.
TEST(ShardCoreTest, AClippedPushIsAppliedScaledDown) {
  for (ConsistencyMode mode : {ConsistencyMode::kAsync, ConsistencyMode::kSync}) {
    ShardCore core(std::make_unique<PlainRule>(), {0.0f, 0.0f}, 0, 2, optionsFor(mode));
    std::vector<Reply> out;
    ASSERT_TRUE(core.acceptPush(1, 0, 1.0f, 2.0, densePush({1, 1})).ok());
    core.onPush(1, densePush({1, 1}), &out);
    ASSERT_TRUE(core.acceptPush(0, 0, 100.0f, 2e4, densePush({100, 100})).ok());
    core.onPush(0, densePush({100, 100}), &out);
    const float scale = mode == ConsistencyMode::kSync ? 0.5f : 1.0f;
    EXPECT_NEAR(core.model()[0], -scale * (1.0f + 2.0f), 1e-5) << nameOf(kConsistencyModeNames, mode);
    EXPECT_EQ(core.clippedPushes(), (std::vector<uint64_t>{1, 0}));
  }
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

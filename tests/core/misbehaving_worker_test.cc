// One misbehaving worker, two drivers of the same protocol core: the Gloo-shaped loop
// (ShardLoop and WorkerClient over the in-memory LocalHub, ranks as threads, real time) and
// the virtual-time job (simulated time). The worker sends a push the server refuses, or goes
// silent, from its 4th push on (core/virtual/worker_fault.h). Both servers must drop it
// after the same 3 pushes, for the same kind of reason, and the other workers must finish
// all their steps, in the async and the sync mode (where the silent worker holds a round).
// A worker whose pushes are ten times the others' is clipped by both, and counted alike.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/runtime/job.h"
#include "core/runtime/shard_session.h"
#include "core/virtual/virtual_job.h"
#include "core/virtual/worker_fault.h"
#include "optim/builtin_methods.h"
#include "tests/core/local_hub.h"

namespace sparseps {
namespace {

constexpr int kWorkers = 3;
constexpr int kSteps = 8;
constexpr size_t kNumel = 64;
const WorkerFault::Kind kRefused = WorkerFault::Kind::kRefusedPush;
const WorkerFault::Kind kSilent = WorkerFault::Kind::kSilent;

SegmentSpecs layout() { return {SegmentSpec{0, 0, kNumel, false}}; }
std::vector<float> initialParams() { return std::vector<float>(kNumel, 1.0f); }

// The gradient of worker k; the `loud` worker's is ten times the others'.
void gradient(int k, int loud, absl::Span<const float> w, absl::Span<float> grad) {
  const float scale = k == loud ? 1.0f : 0.1f;
  for (size_t i = 0; i < w.size(); ++i) grad[i] = scale * w[i];
}

JobSpec makeJob(ConsistencyMode mode) {
  JobSpec job;
  job.num_servers = 1;
  job.num_workers = kWorkers;
  job.method = "asgd";
  job.server.mode = mode;
  job.server.lr = LrSchedule{0.1, {}, 0.1, 0};
  job.server.pushes_per_epoch = 1e9;
  job.server.snapshot_every = 1e9;
  // Far above a step here (microseconds), so that only the misbehaving worker is dropped
  // on a busy machine too.
  job.peer_timeout = std::chrono::milliseconds(500);
  return job;
}

// What a run gives: the shard's drops and clips, and each worker's completed steps.
struct Outcome {
  std::vector<DroppedWorker> dropped;
  std::vector<ClippedWorker> clipped;
  std::vector<int> steps = std::vector<int>(kWorkers, 0);
};

// Spoils what its rank sends while `spoil` is set.
class FaultyEndpoint : public Endpoint {
 public:
  explicit FaultyEndpoint(std::unique_ptr<Endpoint> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  absl::Status send(int dst, absl::Span<const uint8_t> message) override {
    if (!spoil) return inner_->send(dst, message);
    std::vector<uint8_t> spoiled(message.begin(), message.end());
    spoilPush(&spoiled);
    return inner_->send(dst, spoiled);
  }
  absl::Status receive(absl::Span<const int> ranks, Frame* frame, Deadline until) override {
    return inner_->receive(ranks, frame, until);
  }
  void drop(int rank, const std::string& why) override { inner_->drop(rank, why); }
  bool spoil = false;

 private:
  std::unique_ptr<Endpoint> inner_;
};

Outcome runHub(const MethodRegistry& methods, ConsistencyMode mode,
               const std::vector<WorkerFault>& faults, int loud = -1) {
  const JobSpec job = makeJob(mode);
  LocalHub hub(1 + kWorkers);
  Outcome out;
  std::vector<std::thread> threads;
  // A silent worker keeps its endpoint open (it hangs, it does not leave) until the end.
  std::vector<std::unique_ptr<FaultyEndpoint>> endpoints;
  for (int k = 0; k < kWorkers; ++k) {
    endpoints.push_back(std::make_unique<FaultyEndpoint>(hub.endpoint(1 + k)));
  }
  threads.emplace_back([&] {
    auto endpoint = hub.endpoint(0);
    auto resolved = resolveJob(job, methods, layout());
    ASSERT_TRUE(resolved.ok()) << resolved.status();
    auto core = makeShardCore(*resolved, 0, kWorkers, initialParams(), {}, job.server);
    auto session = ShardSession::make(*core, job, 0, resolved->plan.shard(0));
    ASSERT_TRUE(session.ok()) << session.status();
    ShardLoop loop(*endpoint, *session, job, /*layout_fingerprint=*/0);
    ASSERT_TRUE(loop.run().ok());
    out.dropped = loop.stats().dropped;
    out.clipped = loop.stats().clipped;
  });
  for (int k = 0; k < kWorkers; ++k) {
    threads.emplace_back([&, k] {
      FaultyEndpoint& endpoint = *endpoints[k];
      auto client = makeWorkerClient(endpoint, job, methods, layout(), 0);
      ASSERT_TRUE(client.ok()) << client.status();
      std::vector<float> w(kNumel), grad(kNumel);
      std::vector<float> buffers;
      ASSERT_TRUE((*client)->start(absl::MakeSpan(w), absl::MakeSpan(buffers)).ok());
      for (int step = 1; step <= kSteps; ++step) {
        const WorkerFault* f = faultOf(faults, k, step);
        if (f != nullptr && f->kind == kSilent) return;
        endpoint.spoil = f != nullptr;
        gradient(k, loud, w, absl::MakeSpan(grad));
        StepStats stats;
        if (!(*client)->step(grad, absl::MakeSpan(w), 0, &stats).ok()) return;
        out.steps[k] = step;
      }
      EXPECT_TRUE((*client)->finish().ok()) << "worker " << k;
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

class Steps : public VirtualWorkload {
 public:
  explicit Steps(int loud) : loud_(loud) {}
  Step next(int worker, absl::Span<const float> w, absl::Span<float>,
            absl::Span<float> grad) override {
    Step s;
    if (given_[worker] == kSteps) {
      s.kind = Step::Kind::kDone;
      return s;
    }
    ++given_[worker];
    gradient(worker, loud_, w, grad);
    s.samples = 1;
    return s;
  }

 private:
  const int loud_;
  std::vector<int> given_ = std::vector<int>(kWorkers, 0);
};

Outcome runVirtual(const MethodRegistry& methods, ConsistencyMode mode,
                   const std::vector<WorkerFault>& faults, int loud = -1) {
  VirtualJobOptions o;
  o.job = makeJob(mode);
  o.time.step = TimeModel::Step::kFixed;
  o.time.step_seconds = 0.010;
  o.time.codec_measured = false;
  o.specs = layout();
  o.initial_params = initialParams();
  o.faults = faults;
  Outcome out;
  o.on_step = [&](const StepRecord& r) { out.steps[r.worker] = static_cast<int>(r.step); };
  Steps workload(loud);
  auto result = runVirtualJob(o, methods, workload);
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) {
    out.dropped = result->dropped;
    out.clipped = result->clipped;
  }
  return out;
}

void expectDroppedAfterThreePushes(const Outcome& out, WorkerFault::Kind kind,
                                   ConsistencyMode mode) {
  ASSERT_EQ(out.dropped.size(), 1u);
  const DroppedWorker& d = out.dropped[0];
  EXPECT_EQ(d.worker, 1);
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.pushes, 3u);
  const std::string want = kind == kRefused                      ? "bad message"
                           : mode == ConsistencyMode::kAsync ? "made no push"
                                                                 : "held a sync round";
  EXPECT_NE(d.reason.find(want), std::string::npos) << d.reason;
  EXPECT_EQ(out.steps[0], kSteps);
  EXPECT_EQ(out.steps[2], kSteps);
  EXPECT_EQ(out.steps[1], 3);
}

class MisbehavingWorkerTest
    : public ::testing::TestWithParam<std::tuple<ConsistencyMode, WorkerFault::Kind>> {};

TEST_P(MisbehavingWorkerTest, HubAndVirtualJobDropItAtTheSameStepAndTheOthersFinish) {
  const auto& [mode, kind] = GetParam();
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  const WorkerFault fault{1, 4, kind};
  const Outcome hub = runHub(methods, mode, {fault});
  const Outcome virt = runVirtual(methods, mode, {fault});
  {
    SCOPED_TRACE("hub");
    expectDroppedAfterThreePushes(hub, kind, mode);
  }
  {
    SCOPED_TRACE("virtual");
    expectDroppedAfterThreePushes(virt, kind, mode);
  }
}

// In sync rounds every worker has pushed before the second round, so from then on the loud
// worker's pushes are over twice the others' median norm: clipped (push_guard.h) in both
// drivers, its first push too where another came first in the round.
TEST(PushGuardAcrossDrivers, BothClipTheWorkerWhosePushesAreTenTimesTheOthers) {
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  for (const Outcome& out : {runHub(methods, ConsistencyMode::kSync, {}, /*loud=*/1),
                             runVirtual(methods, ConsistencyMode::kSync, {}, /*loud=*/1)}) {
    EXPECT_TRUE(out.dropped.empty());
    ASSERT_EQ(out.clipped.size(), 1u);
    EXPECT_EQ(out.clipped[0].worker, 1);
    EXPECT_EQ(out.clipped[0].rank, 2);
    EXPECT_GE(out.clipped[0].pushes, uint64_t{kSteps - 1});
    EXPECT_LE(out.clipped[0].pushes, uint64_t{kSteps});
    EXPECT_EQ(out.steps, std::vector<int>(kWorkers, kSteps));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, MisbehavingWorkerTest,
    ::testing::Combine(::testing::Values(ConsistencyMode::kAsync, ConsistencyMode::kSync),
                       ::testing::Values(kRefused, kSilent)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == ConsistencyMode::kAsync ? "Async" : "Sync") +
             (std::get<1>(info.param) == kRefused ? "RefusedPush" : "Silent");
    });

}  // namespace
}  // namespace sparseps

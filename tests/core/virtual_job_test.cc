// The virtual-time job against figures worked out by hand: compute-bound and link-bound
// throughput, the staleness of workers in lockstep, sync rounds waiting for a straggler,
// bounded staleness holding a fast worker, exact wire bytes, and the same records twice.
// The workload is a quadratic (grad = 0.01 * (w - 1)): no LibTorch needed.

#include "core/virtual/virtual_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/virtual/timed_runner.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

constexpr size_t kBig = 1000, kSmall = 10;

SegmentSpecs layout() {
  return {SegmentSpec{0, 0, kBig, true}, SegmentSpec{1, kBig, kSmall, false}};
}

// Each worker pulls w toward 1 for `steps` steps, then stops without an epoch end (as
// --max-steps stops one); its BN buffers, if the job has any, hold (worker + 1) * step.
class Quadratic : public VirtualWorkload {
 public:
  Quadratic(int workers, int steps) : steps_(steps), done_(workers, 0) {}
  Step next(int worker, absl::Span<const float> w, absl::Span<float> buffers,
            absl::Span<float> grad) override {
    Step s;
    if (done_[worker] == steps_) {
      s.kind = Step::Kind::kDone;
      return s;
    }
    ++done_[worker];
    for (size_t i = 0; i < w.size(); ++i) grad[i] = 0.01f * (w[i] - 1.0f);
    for (float& b : buffers) b = static_cast<float>((worker + 1) * done_[worker]);
    s.samples = 1;
    return s;
  }

 private:
  int steps_;
  std::vector<int> done_;
};

struct Outcome {
  VirtualJobResult result;
  std::vector<StepRecord> records;
};

VirtualJobOptions baseOptions(const std::string& method, int workers) {
  VirtualJobOptions o;
  o.job.num_servers = 1;
  o.job.num_workers = workers;
  o.job.method = method;
  o.job.server.pushes_per_epoch = 1e9;
  o.time.step = TimeModel::Step::kFixed;
  o.time.step_seconds = 0.010;
  o.time.codec_measured = false;
  o.time.codec_seconds = 0;
  o.specs = layout();
  o.initial_params.assign(kBig + kSmall, 0.5f);
  return o;
}

Outcome run(VirtualJobOptions o, int steps) {
  MethodRegistry methods;
  EXPECT_TRUE(registerBuiltinMethods(methods).ok());
  Outcome r;
  o.on_step = [&](const StepRecord& rec) { r.records.push_back(rec); };
  Quadratic workload(o.job.num_workers, steps);
  auto result = runVirtualJob(o, methods, workload);
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) r.result = *result;
  return r;
}

TEST(TimedRunner, GreedySpanPlacesEachTaskOnTheFirstFreeThread) {
  // Two threads: 3 | 3, then 2 on each at 3 (ends 5, 5), the last 2 at 5: ends at 7.
  EXPECT_DOUBLE_EQ(greedySpan({3, 3, 2, 2, 2}, 2), 7);
  EXPECT_DOUBLE_EQ(greedySpan({3, 3, 2, 2, 2}, 1), 12);  // one thread: the sum
  EXPECT_DOUBLE_EQ(greedySpan({3, 3, 2, 2, 2}, 8), 3);   // a thread each: the longest
  // In the order given: a long task last ends late even when others are free.
  EXPECT_DOUBLE_EQ(greedySpan({1, 1, 1, 1, 4}, 2), 6);
  EXPECT_DOUBLE_EQ(greedySpan({}, 4), 0);
}

TEST(TimedRunner, RunsEachTaskOnceInOrderAndCountsWhatThreadsWouldOverlap) {
  for (int threads : {1, 4}) {
    TimedRunner runner(threads);
    EXPECT_EQ(runner.threads(), threads);
    std::vector<size_t> order;
    volatile double sink = 0;
    const double c0 = threadCpuSeconds();
    runner.parallelFor(6, [&](size_t i) {
      order.push_back(i);
      for (int j = 0; j < 200000; ++j) sink = sink + std::sqrt(static_cast<double>(j + i));
    });
    const double cpu = threadCpuSeconds() - c0;
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
    const double overlap = runner.takeOverlap();
    if (threads == 1) {
      EXPECT_EQ(overlap, 0.0);  // one thread runs them back to back, as inline
    } else {
      // Six similar tasks on four threads: about four of the six overlap.
      EXPECT_GT(overlap, 0.2 * cpu);
      EXPECT_LT(overlap, cpu);
    }
    EXPECT_EQ(runner.takeOverlap(), 0.0);  // taken: the count starts again
  }
}

TEST(VirtualJob, ComputeBoundWorkersNeverWaitAndSeeEachOthersPushes) {
  constexpr int kWorkers = 4, kSteps = 25;
  const Outcome r = run(baseOptions("asgd", kWorkers), kSteps);
  ASSERT_EQ(r.records.size(), size_t{kWorkers * kSteps});
  // Unlimited links, free coding: every step takes exactly its 10 ms of compute.
  EXPECT_DOUBLE_EQ(r.result.simulated_seconds, kSteps * 0.010);
  EXPECT_EQ(r.result.samples, uint64_t{kWorkers * kSteps});
  // In lockstep the pushes of one round are applied one after another, worker 0 first:
  // worker k's reply at step t > 1 is 3 versions past its last (the others' pushes).
  for (const StepRecord& rec : r.records) {
    const uint64_t want = rec.step == 1 ? static_cast<uint64_t>(rec.worker) : kWorkers - 1;
    EXPECT_EQ(rec.staleness, want) << "worker " << rec.worker << " step " << rec.step;
  }
}

TEST(VirtualJob, BytesAreTheWireFormatsAndLinksSerializeOnTheServersNic) {
  constexpr int kWorkers = 4, kSteps = 20;
  VirtualJobOptions o = baseOptions("asgd", kWorkers);
  o.time.step_seconds = 1e-6;      // next to nothing: the links decide
  o.time.link.bits_per_second = 1e8;  // 100 Mbit/s every NIC
  const Outcome r = run(o, kSteps);
  // A dense push and a dense reply: 56-byte header, two 13-byte segment headers, the floats.
  const uint64_t message = 56 + 2 * 13 + 4 * (kBig + kSmall);
  for (const StepRecord& rec : r.records) {
    EXPECT_EQ(rec.bytes_up, message);
    EXPECT_EQ(rec.bytes_down, message);
  }
  // The server's uplink is the bottleneck and never idles: it first sends the starting model
  // (a message of the same size) to each worker, then one reply per push, one message time
  // each; the 1 us steps hide behind it.
  // A message's frames on the link: a 66-byte header per 1,448 bytes of it, after its
  // handshake: two round trips (the header's and the payload's) of a 48-byte control
  // packet, one frame of 114 bytes on each of four links.
  const uint64_t frames = message + (message + 1447) / 1448 * 66;
  const double handshake = 2 * 4 * 114 * 8 / 1e8;
  const double per_message = handshake + frames * 8 / 1e8;
  const double want = (kSteps + 1) * kWorkers * per_message;
  EXPECT_NEAR(r.result.simulated_seconds, want, 1e-3 * want);
  EXPECT_EQ(r.result.bytes_up, kWorkers * (kSteps * message + 56));  // + each goodbye
}

TEST(VirtualJob, SyncRoundsWaitForTheStraggler) {
  constexpr int kWorkers = 3, kSteps = 10;
  VirtualJobOptions o = baseOptions("asgd", kWorkers);
  o.job.server.mode = ConsistencyMode::kSync;
  o.time.stragglers = 1;
  o.time.straggler_factor = 3;  // worker 0 takes 30 ms
  const Outcome r = run(o, kSteps);
  EXPECT_NEAR(r.result.simulated_seconds, kSteps * 0.030, 1e-9);
  for (const StepRecord& rec : r.records) {
    EXPECT_EQ(rec.staleness, 0u);  // one version per round, every worker answered
    EXPECT_NEAR(rec.time, rec.step * 0.030, 1e-9);
  }
}

TEST(VirtualJob, BoundedStalenessHoldsTheFastWorker) {
  constexpr int kSteps = 12;
  VirtualJobOptions o = baseOptions("asgd", 2);
  o.job.server.mode = ConsistencyMode::kStaleness;
  o.job.server.staleness = 1;
  o.time.stragglers = 1;
  o.time.straggler_factor = 4;  // worker 0: 40 ms, worker 1: 10 ms
  const Outcome r = run(o, kSteps);
  // Worker 1 may be at most one step ahead of worker 0 when its reply comes back.
  std::vector<uint64_t> steps(2, 0);
  for (const StepRecord& rec : r.records) {
    steps[rec.worker] = rec.step;
    if (rec.worker == 1) {
      EXPECT_LE(steps[1], steps[0] + 2) << "at " << rec.time;
    }
  }
  // Without the bound worker 1 would finish in 120 ms; held, it follows worker 0.
  const auto last1 = std::find_if(r.records.rbegin(), r.records.rend(),
                                  [](const StepRecord& rec) { return rec.worker == 1; });
  EXPECT_GT(last1->time, 0.35);
}

TEST(VirtualJob, SameInputsGiveTheSameRecords) {
  VirtualJobOptions o = baseOptions("dgs", 5);
  o.time.link.bits_per_second = 1e7;
  o.time.step_seconds = 0.002;
  o.time.jitter_cv = 0.3;
  o.time.seed = 11;
  const Outcome a = run(o, 15), b = run(o, 15);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    EXPECT_EQ(a.records[i].worker, b.records[i].worker);
    EXPECT_EQ(a.records[i].time, b.records[i].time);
    EXPECT_EQ(a.records[i].bytes_up, b.records[i].bytes_up);
    EXPECT_EQ(a.records[i].staleness, b.records[i].staleness);
  }
  EXPECT_EQ(a.result.simulated_seconds, b.result.simulated_seconds);
  // The jitter makes the workers part: some steps see more than the lockstep staleness.
  EXPECT_GT(a.result.staleness.size(), 1u);
}

TEST(VirtualJob, SnapshotsHoldTheWholeModel) {
  VirtualJobOptions o = baseOptions("msgd", 2);
  o.job.num_servers = 2;  // one segment per shard: the snapshot joins their slices
  o.job.server.pushes_per_epoch = 4;
  o.job.server.snapshot_every = 1;
  std::vector<Snapshot> seen;
  o.on_snapshot = [&](Snapshot s) { seen.push_back(std::move(s)); };
  run(o, 6);  // 12 pushes: epochs 1, 2, 3, then the final model (the same version)
  ASSERT_EQ(seen.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(seen[i].epoch, static_cast<double>(i + 1));
    EXPECT_FALSE(seen[i].final);
  }
  EXPECT_TRUE(seen[3].final);
  ASSERT_EQ(seen[3].params.size(), kBig + kSmall);
  // msgd pulls every weight from 0.5 toward 1: both shards' slices moved.
  EXPECT_GT(seen[3].params[0], 0.5f);
  EXPECT_GT(seen[3].params[kBig + 1], 0.5f);
}

TEST(VirtualJob, AWorkerThatStopsSendsItsLastBatchNormStatistics) {
  VirtualJobOptions o = baseOptions("msgd", 3);
  o.job.server.snapshot_every = 1;  // 12 pushes of an epoch of 1e9: the final model only
  o.initial_buffers.assign(2, 0.0f);
  std::vector<Snapshot> seen;
  o.on_snapshot = [&](Snapshot s) { seen.push_back(std::move(s)); };
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  Quadratic workload(3, 4);
  ASSERT_TRUE(runVirtualJob(o, methods, workload).ok());
  ASSERT_FALSE(seen.empty());
  ASSERT_TRUE(seen.back().final);
  // Each worker's statistics after its 4th and last step, averaged: (4 + 8 + 12) / 3.
  EXPECT_EQ(seen.back().buffers, (std::vector<float>{8.0f, 8.0f}));
}

TEST(VirtualJob, BadTimeModelIsAClearError) {
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  VirtualJobOptions o = baseOptions("asgd", 2);
  o.time.step_seconds = -1;
  Quadratic workload(2, 1);
  auto result = runVirtualJob(o, methods, workload);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(std::string(result.status().message()).find("step time"), std::string::npos);
}

TEST(VirtualJob, WorkersStartInTurnWithTheFirstModelsRate) {
  // 10 ms steps, 25 ms between starts: worker k's first model leaves at 25k ms, so
  // worker 0 has made two pushes before worker 1 makes its first, and worker 1 its own
  // two before worker 2 starts; the first pushes see fewer workers, and less staleness.
  constexpr int kWorkers = 3, kSteps = 6;
  VirtualJobOptions o = baseOptions("asgd", kWorkers);
  o.job.start_gap = 0.025;
  o.job.start_lr = 0.001;
  o.job.method_options.setLr0(0.1);
  o.job.server.lr.lr0 = 0.1;
  const Outcome r = run(o, kSteps);
  ASSERT_EQ(r.records.size(), size_t{kWorkers * kSteps});
  std::vector<int> first_order;
  std::vector<double> first_time(kWorkers, -1);
  for (const StepRecord& rec : r.records) {
    if (rec.step == 1) {
      first_order.push_back(rec.worker);
      first_time[rec.worker] = rec.time;
      // The first push is made with the rate the first model carried.
      EXPECT_FLOAT_EQ(rec.lr, 0.001f) << "worker " << rec.worker;
    } else {
      EXPECT_FLOAT_EQ(rec.lr, 0.1f) << "worker " << rec.worker << " step " << rec.step;
    }
  }
  EXPECT_EQ(first_order, (std::vector<int>{0, 1, 2}));
  for (int k = 0; k < kWorkers; ++k) {
    EXPECT_NEAR(first_time[k], 0.025 * k + 0.010, 1e-9) << "worker " << k;
  }
  // Records come in time order: worker 0's second reply (at 20 ms) before worker 1's first.
  EXPECT_EQ(r.records[0].worker, 0);
  EXPECT_EQ(r.records[1].worker, 0);
  EXPECT_EQ(r.records[1].step, 2u);
  EXPECT_EQ(r.records[0].staleness, 0u);
  // All at once (no gap): every worker's first reply comes at 10 ms.
  o.job.start_gap = 0;
  const Outcome together = run(o, kSteps);
  for (int k = 0; k < kWorkers; ++k) EXPECT_DOUBLE_EQ(together.records[k].time, 0.010);
}

TEST(VirtualJob, StartGapNeedsTheAsyncMode) {
  VirtualJobOptions o = baseOptions("asgd", 2);
  o.job.start_gap = 1;
  o.job.server.mode = ConsistencyMode::kSync;
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  Quadratic workload(2, 3);
  auto result = runVirtualJob(o, methods, workload);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(std::string(result.status().message()).find("start_gap needs mode async"),
            std::string::npos)
      << result.status();
}

}  // namespace
}  // namespace sparseps

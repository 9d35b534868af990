// The server loop and worker client over the in-memory LocalHub, ranks as threads, with
// test-local rules (plain SGD: push lr*g dense, W -= scale*p, reply dense W), so the
// runtime's behaviour is tested apart from the methods of optim/.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <random>
#include <thread>

#include "compressors/apply.h"
#include "core/runtime/checkpoint.h"
#include "tests/core/local_hub.h"
#include "core/runtime/protocol.h"
#include "core/runtime/shard_loop.h"
#include "core/runtime/shard_core.h"
#include "core/runtime/worker_client.h"

namespace sparseps {
namespace {

// Plain SGD rules. With `borrows`, they read dense values through compressors/apply.h and
// say so, and the runtime decodes what they get without copying it (a sync round keeps
// owned copies); without, every dense segment they are given must own its values.
class SgdWorker : public WorkerRule {
 public:
  SgdWorker(SegmentSpecs specs, bool borrows) : specs_(std::move(specs)), borrows_(borrows) {}
  void makePush(absl::Span<const float> grad, absl::Span<const float>, const StepContext& ctx,
                Message* push) override {
    push->clear();
    for (const auto& spec : specs_) {
      SegmentData seg;
      denseSegment(grad.subspan(spec.offset, spec.numel), spec.id, &seg);
      for (float& v : seg.values) v *= ctx.lr;
      push->push_back(std::move(seg));
    }
  }
  void applyReply(const Message& reply, absl::Span<float> w) override {
    for (const auto& s : reply) {
      if (!borrows_) {
        EXPECT_EQ(s.borrowed, nullptr);
      }
    }
    copyDenseInto(reply, specs_, w);
  }
  bool readsBorrowedDense() const override { return borrows_; }
  std::string saveState() const override { return {}; }
  absl::Status loadState(const std::string&) override { return absl::OkStatus(); }

 private:
  SegmentSpecs specs_;
  bool borrows_;
};

class SgdServer : public ServerRule {
 public:
  // Records the workers announced by onWorkerStart in *started.
  SgdServer(SegmentSpecs specs, std::vector<int>* started, bool borrows)
      : specs_(std::move(specs)), started_(started), borrows_(borrows) {}
  void applyPush(int, const Message& push, float scale, absl::Span<float> W) override {
    for (const auto& s : push) {
      const auto& spec = specs_[s.segment_id];
      if (borrows_) {
        scatterAdd(W.subspan(spec.offset, spec.numel), s, -scale);
        continue;
      }
      EXPECT_EQ(s.borrowed, nullptr);
      for (size_t i = 0; i < s.values.size(); ++i) W[spec.offset + i] -= scale * s.values[i];
    }
  }
  bool readsBorrowedDense() const override { return borrows_; }
  void makeReply(int, absl::Span<const float> W, Message* reply) override {
    *reply = denseMessage(specs_, W);
  }
  void onWorkerStart(int worker) override { started_->push_back(worker); }
  std::string saveState() const override { return {}; }
  absl::Status loadState(const std::string&) override { return absl::OkStatus(); }

 private:
  SegmentSpecs specs_;
  std::vector<int>* started_;
  bool borrows_;
};

// Minimizes 0.5*|w - target|^2: the gradient is w - target.
struct Problem {
  SegmentSpecs specs{{0, 0, 6, true}, {1, 6, 3, false}, {2, 9, 5, true}};
  size_t numel = 14;
  size_t num_buffers = 2;
  std::vector<float> target;
  Problem() {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    for (size_t i = 0; i < numel; ++i) target.push_back(normal(rng));
  }
};

struct JobResult {
  std::vector<absl::Status> server_status;
  std::vector<absl::Status> worker_status;
  std::vector<std::vector<float>> server_models;  // per shard
  std::vector<std::vector<int>> started;           // per shard: workers announced to the rule
  std::vector<float> pulled;                      // worker 0's final pull
  std::vector<float> pulled_buffers;
  std::vector<uint64_t> resumed_at;   // per worker: ServerProgress::worker_steps at start
  std::vector<uint64_t> final_steps;  // per worker: WorkerClient::steps() at the end
  std::vector<double> start_seconds;  // per worker: when its start returned, from the job's
  std::vector<float> start_lr;        // per worker: the rate its first model carried
  std::string log;
};

struct JobConfig {
  int shards = 1;
  int workers = 3;
  int steps = 150;  // far past convergence, whatever the interleaving of workers
  ConsistencyMode mode = ConsistencyMode::kAsync;
  int kill_worker = -1;       // this worker index dies after `kill_after` steps
  int kill_after = 5;
  int garbage_worker = -1;    // this worker sends a malformed message at step 3
  int poisoning_worker = -1;  // this worker's gradient is 3e38 everywhere from step 3
  int corrupting_worker = -1;  // from step 3 this worker's pushes to the last shard arrive damaged
  int silent_worker = -1;     // this worker takes its model and then never pushes
  std::chrono::milliseconds peer_timeout = std::chrono::seconds(30);
  std::string checkpoint_path;
  const ShardCheckpoint* resume = nullptr;
  bool rules_borrow = true;  // the rules read dense values in place (see SgdWorker)
  double start_gap = 0;      // JobSpec::start_gap and start_lr
  double start_lr = 0;
};

// An endpoint whose messages to one rank arrive damaged once armed (a flipped payload byte:
// the checksum no longer matches).
class CorruptingEndpoint : public Endpoint {
 public:
  CorruptingEndpoint(std::unique_ptr<Endpoint> inner, int victim)
      : inner_(std::move(inner)), victim_(victim) {}
  int rank() const override { return inner_->rank(); }
  absl::Status send(int dst, absl::Span<const uint8_t> message) override {
    if (!armed || dst != victim_ || message.size() <= kHeaderBytes) return inner_->send(dst, message);
    std::vector<uint8_t> damaged(message.begin(), message.end());
    damaged.back() ^= 0x40;
    return inner_->send(dst, damaged);
  }
  absl::Status receive(absl::Span<const int> ranks, Frame* frame, Deadline until) override {
    return inner_->receive(ranks, frame, until);
  }
  void drop(int rank, const std::string& why) override { inner_->drop(rank, why); }
  bool armed = false;

 private:
  std::unique_ptr<Endpoint> inner_;
  int victim_;
};

JobResult runJob(const Problem& p, const JobConfig& cfg) {
  const int world = cfg.shards + cfg.workers;
  LocalHub hub(world);
  auto plan = ShardPlan::make(p.specs, cfg.shards).value();
  std::vector<int> server_ranks, worker_ranks;
  for (int s = 0; s < cfg.shards; ++s) server_ranks.push_back(s);
  for (int w = 0; w < cfg.workers; ++w) worker_ranks.push_back(cfg.shards + w);

  JobResult result;
  result.server_status.resize(cfg.shards);
  result.worker_status.resize(cfg.workers);
  result.server_models.resize(cfg.shards);
  result.started.resize(cfg.shards);
  result.resumed_at.resize(cfg.workers);
  result.final_steps.resize(cfg.workers);
  result.start_seconds.resize(cfg.workers);
  result.start_lr.resize(cfg.workers);
  const auto job_start = std::chrono::steady_clock::now();
  std::mutex log_mu;
  auto log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu);
    result.log += line + "\n";
  };

  // Worker 0 pulls the final model only once every surviving worker has pushed its last
  // step, so the pull sees the finished server model.
  const int survivors = cfg.workers - (cfg.kill_worker >= 0) - (cfg.garbage_worker >= 0) -
                        (cfg.corrupting_worker >= 0) - (cfg.poisoning_worker >= 0) -
                        (cfg.silent_worker >= 0);
  std::atomic<int> finished_steps{0};
  JobSpec job;  // the facts the server loop and the worker client read
  job.num_servers = cfg.shards;
  job.num_workers = cfg.workers;
  job.server.mode = cfg.mode;
  job.server.lr = LrSchedule{0.1, {}, 0.1, 0};
  job.server.pushes_per_epoch = 100;
  job.server.log = log;
  job.checkpoint_path = cfg.checkpoint_path;
  job.checkpoint_every = 10;
  job.peer_timeout = cfg.peer_timeout;
  job.start_gap = cfg.start_gap;
  job.start_lr = cfg.start_lr;
  std::vector<std::thread> threads;
  for (int s = 0; s < cfg.shards; ++s) {
    threads.emplace_back([&, s] {
      const Shard& shard = plan.shard(s);
      const size_t buffers = s == 0 ? p.num_buffers : 0;
      ShardCore core(std::make_unique<SgdServer>(shard.local_specs, &result.started[s], cfg.rules_borrow),
                      std::vector<float>(shard.numel, 0.0f), buffers, cfg.workers, job.server);
      if (cfg.resume) {
        ASSERT_TRUE(core.restore(*cfg.resume).ok());
      }
      auto endpoint = hub.endpoint(s);
      auto session = ShardSession::make(core, job, s, shard);
      ASSERT_TRUE(session.ok()) << session.status();
      ShardLoop loop(*endpoint, *session, job, /*layout_fingerprint=*/0);
      result.server_status[s] = loop.run();
      result.server_models[s] = core.model();
    });
  }
  for (int w = 0; w < cfg.workers; ++w) {
    threads.emplace_back([&, w] {
      std::unique_ptr<Endpoint> endpoint = hub.endpoint(worker_ranks[w]);
      CorruptingEndpoint* corrupting = nullptr;
      if (w == cfg.corrupting_worker) {
        auto wrapped = std::make_unique<CorruptingEndpoint>(std::move(endpoint), server_ranks.back());
        corrupting = wrapped.get();
        endpoint = std::move(wrapped);
      }
      auto session = WorkerSession::make(job, worker_ranks[w], plan,
                                         std::make_unique<SgdWorker>(p.specs, cfg.rules_borrow),
                                         p.num_buffers);
      ASSERT_TRUE(session.ok()) << session.status();
      WorkerClient client(*endpoint, std::move(*session));
      std::vector<float> model(p.numel), buffers(p.num_buffers), grad(p.numel);
      auto started = client.start(absl::MakeSpan(model), absl::MakeSpan(buffers));
      if (!started.ok()) {
        result.worker_status[w] = started.status();
        return;
      }
      result.resumed_at[w] = started->worker_steps;
      result.start_seconds[w] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start).count();
      result.start_lr[w] = started->lr;
      if (w == cfg.silent_worker) {
        // Listens until every shard has cut it off, and reports the first shard's word.
        Frame frame;
        std::vector<int> waiting = server_ranks;
        while (!waiting.empty()) {
          auto s = endpoint->receive(waiting, &frame);
          if (!s.ok()) {
            result.worker_status[w] = s;
            return;
          }
          if (result.worker_status[w].ok()) result.worker_status[w] = frame.peer_status;
          waiting.erase(std::find(waiting.begin(), waiting.end(), frame.src));
        }
        return;
      }
      for (int step = 0; step < cfg.steps; ++step) {
        if (w == cfg.kill_worker && step == cfg.kill_after) {
          hub.kill(worker_ranks[w]);
          return;
        }
        if (w == cfg.garbage_worker && step == 3) {
          std::vector<uint8_t> garbage(kHeaderBytes + 8, 0xAB);
          (void)endpoint->send(server_ranks[0], garbage);
          return;
        }
        if (corrupting && step == 3) corrupting->armed = true;
        for (size_t i = 0; i < p.numel; ++i) grad[i] = model[i] - p.target[i];
        if (w == cfg.poisoning_worker && step >= 3) std::fill(grad.begin(), grad.end(), 3e38f);
        StepStats stats;
        auto status = client.step(grad, absl::MakeSpan(model), 0, &stats);
        if (!status.ok()) {
          result.worker_status[w] = status;
          hub.kill(worker_ranks[w]);  // a worker that fails exits: its connections close
          return;
        }
      }
      ++finished_steps;
      result.final_steps[w] = client.steps();
      std::vector<float> bn = {float(w), 2.0f * float(w)};
      result.worker_status[w] = client.sendBuffers(bn);
      if (w == 0) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (finished_steps < survivors && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        result.pulled.resize(p.numel);
        result.pulled_buffers.resize(p.num_buffers);
        auto pulled = client.pullModel(absl::MakeSpan(result.pulled), absl::MakeSpan(result.pulled_buffers));
        if (!pulled.ok()) result.worker_status[w] = pulled.status();
      }
      if (result.worker_status[w].ok()) result.worker_status[w] = client.finish();
    });
  }
  // A hang is a failure, not a stuck test: after a minute every rank is killed, so each
  // blocked receive returns an error the assertions then report.
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(done_mu);
    if (!done_cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; })) {
      log("watchdog: the job hung for 60 s; killing every rank");
      for (int rank = 0; rank < world; ++rank) hub.kill(rank);
    }
  });
  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> lock(done_mu);
    done = true;
  }
  done_cv.notify_all();
  watchdog.join();
  return result;
}

std::vector<float> gather(const Problem& p, const JobResult& r, int shards) {
  auto plan = ShardPlan::make(p.specs, shards).value();
  std::vector<float> model(p.numel);
  for (int s = 0; s < shards; ++s) {
    std::copy(r.server_models[s].begin(), r.server_models[s].end(),
              model.begin() + plan.shard(s).offset);
  }
  return model;
}

double distance(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(d);
}

void expectAllOk(const JobResult& r, int skip_worker = -1) {
  for (const auto& s : r.server_status) EXPECT_TRUE(s.ok()) << s;
  for (size_t w = 0; w < r.worker_status.size(); ++w) {
    if (static_cast<int>(w) != skip_worker) {
      EXPECT_TRUE(r.worker_status[w].ok()) << r.worker_status[w];
    }
  }
}

TEST(RuntimeLoopTest, AsyncWorkersConverge) {
  Problem p;
  auto r = runJob(p, {});
  expectAllOk(r);
  auto model = gather(p, r, 1);
  const std::vector<float> origin(p.target.size(), 0.0f);
  EXPECT_LT(distance(model, p.target), 1e-3 * distance(origin, p.target) + 1e-3);
  EXPECT_EQ(r.pulled, model);  // the pull sees the final server model
}

// The rules then check that nothing they are given borrows (EXPECT inside them).
TEST(RuntimeLoopTest, WorkersGetTheirFirstModelInTurnWithTheStartRate) {
  Problem p;
  JobConfig cfg;
  cfg.shards = 2;
  cfg.start_gap = 0.3;
  cfg.start_lr = 0.001f;
  auto r = runJob(p, cfg);
  expectAllOk(r);
  for (int w = 0; w < cfg.workers; ++w) {
    // No shard sends a worker its model before its turn (however busy the machine).
    EXPECT_GE(r.start_seconds[w], 0.3 * w) << "worker " << w;
    EXPECT_FLOAT_EQ(r.start_lr[w], 0.001f) << "worker " << w;
  }
  for (const auto& started : r.started) EXPECT_EQ(started, (std::vector<int>{0, 1, 2}));
  const std::vector<float> origin(p.target.size(), 0.0f);
  EXPECT_LT(distance(gather(p, r, 2), p.target), 1e-3 * distance(origin, p.target) + 1e-3);
}

TEST(RuntimeLoopTest, RulesThatReadValuesThemselvesGetOwnedCopies) {
  for (auto mode : {ConsistencyMode::kAsync, ConsistencyMode::kSync}) {
    Problem p;
    JobConfig cfg;
    cfg.mode = mode;
    cfg.rules_borrow = false;
    auto r = runJob(p, cfg);
    expectAllOk(r);
    EXPECT_LT(distance(gather(p, r, 1), p.target), 1e-2);
  }
}

TEST(RuntimeLoopTest, BuffersReachThePulledModel) {
  Problem p;
  JobConfig cfg;
  cfg.workers = 1;
  auto r = runJob(p, cfg);
  expectAllOk(r);
  EXPECT_EQ(r.pulled_buffers, (std::vector<float>{0.0f, 0.0f}));
}

TEST(RuntimeLoopTest, SyncModeConverges) {
  Problem p;
  JobConfig cfg;
  cfg.mode = ConsistencyMode::kSync;
  auto r = runJob(p, cfg);
  expectAllOk(r);
  EXPECT_LT(distance(gather(p, r, 1), p.target), 1e-2);
}

TEST(RuntimeLoopTest, TwoShardsServeOneModel) {
  Problem p;
  JobConfig cfg;
  cfg.shards = 2;
  auto r = runJob(p, cfg);
  expectAllOk(r);
  auto model = gather(p, r, 2);
  EXPECT_LT(distance(model, p.target), 1e-2);
  EXPECT_EQ(r.pulled, model);
  // Each shard told its rule that every worker starts from the model it sent.
  for (int s = 0; s < 2; ++s) EXPECT_EQ(r.started[s], (std::vector<int>{0, 1, 2})) << "shard " << s;
}

TEST(RuntimeLoopTest, ADeadWorkerIsDroppedAndTheOthersFinish) {
  for (auto mode : {ConsistencyMode::kAsync, ConsistencyMode::kSync}) {
    Problem p;
    JobConfig cfg;
    cfg.mode = mode;
    cfg.kill_worker = 1;
    auto r = runJob(p, cfg);
    expectAllOk(r, 1);
    EXPECT_NE(r.log.find("dropping worker 1"), std::string::npos) << r.log;
    EXPECT_LT(distance(gather(p, r, 1), p.target), 1e-2);
  }
}

TEST(RuntimeLoopTest, AMalformedMessageDropsOnlyItsSender) {
  Problem p;
  JobConfig cfg;
  cfg.garbage_worker = 2;
  auto r = runJob(p, cfg);
  expectAllOk(r, 2);
  EXPECT_NE(r.log.find("dropping worker 2 (rank 3): bad message"), std::string::npos) << r.log;
  EXPECT_LT(distance(gather(p, r, 1), p.target), 1e-2);
}

// A finite push no training makes (3e38 times the rate): refused before it is applied, its
// sender named and dropped; the model stays finite and the others converge.
TEST(RuntimeLoopTest, APoisoningPushIsRefusedAndItsSenderDropped) {
  Problem p;
  JobConfig cfg;
  cfg.poisoning_worker = 1;
  auto r = runJob(p, cfg);
  expectAllOk(r, 1);
  EXPECT_FALSE(r.worker_status[1].ok());
  EXPECT_NE(r.log.find("dropping worker 1 (rank 2): bad message"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("is beyond the bound 2^64"), std::string::npos) << r.log;
  const std::vector<float> model = gather(p, r, 1);
  for (float v : model) ASSERT_TRUE(std::isfinite(v));
  EXPECT_LT(distance(model, p.target), 1e-2);
}

// A push that only one shard refuses: that shard drops the worker and tells it, so the
// worker stops with that shard's name instead of waiting for its reply forever; its
// leaving drops it on the other shard, and the others finish.
TEST(RuntimeLoopTest, AWorkerDroppedByOneShardStopsAndLeavesTheOthers) {
  Problem p;
  JobConfig cfg;
  cfg.shards = 2;
  cfg.corrupting_worker = 1;
  auto r = runJob(p, cfg);
  for (const auto& s : r.server_status) EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(r.worker_status[0].ok()) << r.worker_status[0];
  EXPECT_TRUE(r.worker_status[2].ok()) << r.worker_status[2];
  EXPECT_EQ(r.worker_status[1].code(), absl::StatusCode::kAborted) << r.worker_status[1];
  EXPECT_NE(r.worker_status[1].message().find("server shard 1 (rank 1) dropped this worker"),
            std::string::npos) << r.worker_status[1];
  EXPECT_NE(r.log.find("dropping worker 1 (rank 3): bad message: payload checksum mismatch"),
            std::string::npos) << r.log;
  EXPECT_LT(distance(gather(p, r, 2), p.target), 1e-2);
}

// A worker that is alive but never pushes holds every sync or staleness round. After the
// job's peer timeout each shard drops it and closes its connection, and the others finish.
TEST(RuntimeLoopTest, AWorkerThatHoldsTheRoundIsDroppedAtThePeerTimeout) {
  struct Case {
    ConsistencyMode mode;
    int shards;
    const char* round;
  };
  for (const Case& c : {Case{ConsistencyMode::kSync, 2, "sync"},
                        Case{ConsistencyMode::kStaleness, 1, "staleness"}}) {
    SCOPED_TRACE(c.round);
    Problem p;
    JobConfig cfg;
    cfg.mode = c.mode;
    cfg.shards = c.shards;
    cfg.silent_worker = 1;
    cfg.peer_timeout = std::chrono::milliseconds(300);
    const auto start = std::chrono::steady_clock::now();
    auto r = runJob(p, cfg);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    expectAllOk(r, 1);
    EXPECT_TRUE(absl::IsUnavailable(r.worker_status[1])) << r.worker_status[1];
    for (int s = 0; s < c.shards; ++s) {
      EXPECT_NE(r.log.find(absl::StrCat("dropping worker 1 (rank ", c.shards + 1, "): held a ",
                                        c.round, " round for 0.3 s without pushing")),
                std::string::npos)
          << r.log;
    }
    EXPECT_LT(distance(gather(p, r, c.shards), p.target), 1e-2);
    EXPECT_LT(seconds, 20.0);  // dropped at the timeout, long before the 60 s watchdog
  }
}

TEST(RuntimeLoopTest, ResumeContinuesFromTheLastCheckpoint) {
  Problem p;
  const auto path = (std::filesystem::temp_directory_path() /
                     ("sparseps_resume_" + std::to_string(::getpid()) + ".ckpt")).string();
  JobConfig first;
  first.workers = 1;
  first.steps = 25;
  first.checkpoint_path = path;
  auto r1 = runJob(p, first);
  expectAllOk(r1);
  auto saved = loadCheckpoint(path + ".shard0");  // shard s writes <path>.shard<s>
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->version, 25u);  // the final checkpoint holds every applied push
  EXPECT_EQ(saved->model, r1.server_models[0]);

  JobConfig second = first;
  second.resume = &*saved;
  second.steps = 1;
  auto r2 = runJob(p, second);
  expectAllOk(r2);
  // One more SGD step from the checkpointed model, not from zero.
  std::vector<float> expected = saved->model;
  for (size_t i = 0; i < p.numel; ++i) expected[i] -= 0.1f * (expected[i] - p.target[i]);
  for (size_t i = 0; i < p.numel; ++i) EXPECT_NEAR(r2.server_models[0][i], expected[i], 1e-6);
  // The restored rule hears that the worker starts over from the model sent to it.
  EXPECT_EQ(r2.started[0], std::vector<int>{0});
  // The worker hears how many of its pushes the checkpoint holds and counts on from there.
  EXPECT_EQ(r2.resumed_at[0], 25u);
  EXPECT_EQ(r2.final_steps[0], 26u);

  // Each worker hears its own count (two workers that had pushed 7 and 11 times).
  ShardCheckpoint two = *saved;
  two.worker_steps = {7, 11};
  JobConfig third = second;
  third.workers = 2;
  third.resume = &two;
  auto r3 = runJob(p, third);
  expectAllOk(r3);
  EXPECT_EQ(r3.resumed_at, (std::vector<uint64_t>{7, 11}));
  EXPECT_EQ(r3.final_steps, (std::vector<uint64_t>{8, 12}));
  std::filesystem::remove(path + ".shard0");
}

}  // namespace
}  // namespace sparseps

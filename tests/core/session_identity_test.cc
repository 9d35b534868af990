// One protocol core, driven two ways: the same schedule through the Gloo-shaped runtime
// (ShardLoop and WorkerClient over the in-memory LocalHub, ranks as threads taking turns) and
// through the virtual-time job gives bit-identical models and identical message bytes, for
// every registered method, 1 and 3 workers, 1 and 2 shards. Both drive the same
// ShardSession and WorkerSession, so a difference here is a rule written twice. A shard
// serving with several threads (--server-threads) changes no byte of either run.

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/runtime/job.h"
#include "core/runtime/shard_session.h"
#include "core/virtual/virtual_job.h"
#include "optim/builtin_methods.h"
#include "tests/core/local_hub.h"

namespace sparseps {
namespace {

constexpr int kSteps = 12;
constexpr int kEpochEndAfter = 5;  // each worker sends its BN buffers after this many steps

SegmentSpecs layout() {
  return {SegmentSpec{0, 0, 1000, true, 20}, SegmentSpec{1, 1000, 10, false},
          SegmentSpec{2, 1010, 300, true, 10}};
}
constexpr size_t kNumel = 1310;

std::vector<float> initialParams() {
  std::vector<float> w(kNumel);
  for (size_t i = 0; i < kNumel; ++i) w[i] = 0.5f + 0.001f * static_cast<float>(i % 97);
  return w;
}
const std::vector<float> kInitialBuffers = {0.25f, 0.75f};

// The workload both runs compute: a quadratic with a different minimum per coordinate,
// and BN buffers that follow the model.
void gradient(absl::Span<const float> w, absl::Span<float> grad) {
  for (size_t i = 0; i < w.size(); ++i) {
    grad[i] = 0.05f * (w[i] - static_cast<float>(i % 7) * 0.1f);
  }
}
void updateBuffers(absl::Span<const float> w, absl::Span<float> buffers) {
  for (size_t j = 0; j < buffers.size(); ++j) buffers[j] = 0.9f * buffers[j] + 0.1f * w[j];
}

// What a run gives: every message per (sender, receiver) in order, the servers' whole
// model and averaged buffers, and each worker's model.
struct Outcome {
  std::map<std::pair<int, int>, std::vector<std::vector<uint8_t>>> messages;
  std::vector<float> server_model, server_buffers;
  std::vector<std::vector<float>> worker_models;
};

JobSpec makeJob(const std::string& method, int shards, int workers, int server_threads) {
  JobSpec job;
  job.server.threads = server_threads;
  job.server.min_fan_out = 0;  // this small layout's batches too go to the threads
  job.num_servers = shards;
  job.num_workers = workers;
  job.method = method;
  job.server.lr = LrSchedule{0.1, {}, 0.1, 0};
  job.server.pushes_per_epoch = 1e9;
  job.server.snapshot_every = 1e9;  // only the final snapshot (the virtual job's model)
  return job;
}

class Quadratic : public VirtualWorkload {
 public:
  explicit Quadratic(int workers) : steps_(workers, 0), models_(workers) {}
  Step next(int worker, absl::Span<const float> w, absl::Span<float> buffers,
            absl::Span<float> grad) override {
    Step s;
    int& done = steps_[worker];
    if (done == kEpochEndAfter && !epoch_end_sent_[worker]) {
      epoch_end_sent_[worker] = true;
      s.kind = Step::Kind::kEpochEnd;
      return s;
    }
    if (done == kSteps) {
      models_[worker].assign(w.begin(), w.end());
      s.kind = Step::Kind::kDone;
      return s;
    }
    ++done;
    gradient(w, grad);
    updateBuffers(w, buffers);
    s.samples = 1;
    return s;
  }
  std::vector<std::vector<float>> models() const { return models_; }

 private:
  std::vector<int> steps_;
  std::map<int, bool> epoch_end_sent_;
  std::vector<std::vector<float>> models_;
};

Outcome runVirtual(const MethodRegistry& methods, const std::string& method, int shards,
                   int workers, int server_threads = 1) {
  VirtualJobOptions o;
  o.job = makeJob(method, shards, workers, server_threads);
  o.time.step = TimeModel::Step::kFixed;
  o.time.step_seconds = 0.010;
  o.time.codec_measured = false;
  o.time.codec_seconds = 0;
  o.specs = layout();
  o.initial_params = initialParams();
  o.initial_buffers = kInitialBuffers;
  Outcome out;
  o.on_message = [&](int from, int to, absl::Span<const uint8_t> m) {
    out.messages[{from, to}].emplace_back(m.begin(), m.end());
  };
  o.on_snapshot = [&](Snapshot s) {
    EXPECT_TRUE(s.final);
    out.server_model = s.params;
    out.server_buffers = s.buffers;
  };
  Quadratic workload(workers);
  auto result = runVirtualJob(o, methods, workload);
  EXPECT_TRUE(result.ok()) << result.status();
  out.worker_models = workload.models();
  return out;
}

// Records what its rank sends.
class RecordingEndpoint : public Endpoint {
 public:
  RecordingEndpoint(std::unique_ptr<Endpoint> inner, Outcome* out, std::mutex* mu)
      : inner_(std::move(inner)), out_(out), mu_(mu) {}
  int rank() const override { return inner_->rank(); }
  absl::Status send(int dst, absl::Span<const uint8_t> message) override {
    {
      std::lock_guard<std::mutex> lock(*mu_);
      out_->messages[{rank(), dst}].emplace_back(message.begin(), message.end());
    }
    return inner_->send(dst, message);
  }
  absl::Status receive(absl::Span<const int> ranks, Frame* frame, Deadline until) override {
    return inner_->receive(ranks, frame, until);
  }
  void drop(int rank, const std::string& why) override { inner_->drop(rank, why); }

 private:
  std::unique_ptr<Endpoint> inner_;
  Outcome* out_;
  std::mutex* mu_;
};

// The virtual job's schedule with equal step times and no link or codec time: every round,
// workers 0, 1, ... push in turn, each answered before the next is served; a worker says
// goodbye right after its last reply. Here the ranks take turns to the same order.
Outcome runHub(const MethodRegistry& methods, const std::string& method, int shards,
               int workers, int server_threads = 1) {
  const JobSpec job = makeJob(method, shards, workers, server_threads);
  const SegmentSpecs specs = layout();
  const std::vector<float> initial = initialParams();
  LocalHub hub(shards + workers);
  Outcome out;
  std::mutex record_mu;
  out.server_model.resize(kNumel);
  out.worker_models.resize(workers);
  std::mutex turn_mu;
  std::condition_variable turn_cv;
  int turn = 0;  // round * workers + worker
  std::vector<std::thread> threads;
  std::vector<absl::Status> status(shards + workers);
  for (int s = 0; s < shards; ++s) {
    threads.emplace_back([&, s] {
      RecordingEndpoint endpoint(hub.endpoint(s), &out, &record_mu);
      auto resolved = resolveJob(job, methods, specs);
      ASSERT_TRUE(resolved.ok()) << resolved.status();
      const Shard& range = resolved->plan.shard(s);
      auto core_made = makeShardCore(*resolved, s, workers, initial, kInitialBuffers, job.server);
      ShardCore& core = *core_made;
      auto session = ShardSession::make(core, job, s, range);
      ASSERT_TRUE(session.ok()) << session.status();
      ShardLoop loop(endpoint, *session, job, /*layout_fingerprint=*/0);
      status[s] = loop.run();
      std::lock_guard<std::mutex> lock(record_mu);
      std::copy(core.model().begin(), core.model().end(), out.server_model.begin() + range.offset);
      if (s == 0) out.server_buffers = core.averagedBuffers();
    });
  }
  for (int k = 0; k < workers; ++k) {
    threads.emplace_back([&, k] {
      RecordingEndpoint endpoint(hub.endpoint(shards + k), &out, &record_mu);
      auto client = makeWorkerClient(endpoint, job, methods, specs, kInitialBuffers.size());
      ASSERT_TRUE(client.ok()) << client.status();
      std::vector<float> w(kNumel), buffers(kInitialBuffers.size()), grad(kNumel);
      auto started = (*client)->start(absl::MakeSpan(w), absl::MakeSpan(buffers));
      ASSERT_TRUE(started.ok()) << started.status();
      for (int step = 0; step < kSteps; ++step) {
        std::unique_lock<std::mutex> lock(turn_mu);
        turn_cv.wait(lock, [&] { return turn == step * workers + k; });
        gradient(w, absl::MakeSpan(grad));
        updateBuffers(w, absl::MakeSpan(buffers));
        StepStats stats;
        status[shards + k] = (*client)->step(grad, absl::MakeSpan(w), 0, &stats);
        if (status[shards + k].ok() && step + 1 == kEpochEndAfter) {
          status[shards + k] = (*client)->sendBuffers(buffers);
        }
        if (status[shards + k].ok() && step + 1 == kSteps) {
          // Its last BN statistics, then its goodbyes, as PsWorker::finish() sends them.
          status[shards + k] = (*client)->sendBuffers(buffers);
          if (status[shards + k].ok()) status[shards + k] = (*client)->finish();
        }
        ++turn;
        turn_cv.notify_all();
        if (!status[shards + k].ok()) return;
      }
      out.worker_models[k] = w;
    });
  }
  for (auto& t : threads) t.join();
  for (size_t r = 0; r < status.size(); ++r) {
    EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
  }
  return out;
}

// Every message byte and every model bit the same.
void expectSameRun(const Outcome& a, const Outcome& b, int workers) {
  ASSERT_EQ(a.messages.size(), b.messages.size());
  for (const auto& [link, sent] : a.messages) {
    SCOPED_TRACE(absl::StrCat("rank ", link.first, " -> rank ", link.second));
    ASSERT_EQ(b.messages.count(link), 1u);
    const auto& other = b.messages.at(link);
    ASSERT_EQ(sent.size(), other.size());
    for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(sent[i], other[i]) << "message " << i;
  }
  // Bit-identical: compared as floats with ==, not within a tolerance.
  EXPECT_EQ(a.server_model, b.server_model);
  EXPECT_EQ(a.server_buffers, b.server_buffers);
  ASSERT_EQ(a.worker_models.size(), b.worker_models.size());
  for (int k = 0; k < workers; ++k) EXPECT_EQ(a.worker_models[k], b.worker_models[k]) << k;
  // The run went somewhere: the model moved from where it started.
  EXPECT_NE(a.server_model, initialParams());
}

class SessionIdentityTest : public ::testing::TestWithParam<std::tuple<std::string, int, int>> {};

TEST_P(SessionIdentityTest, HubAndVirtualJobSendTheSameBytesAndEndWithTheSameModels) {
  const auto& [method, shards, workers] = GetParam();
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  expectSameRun(runHub(methods, method, shards, workers),
                runVirtual(methods, method, shards, workers), workers);
}

// The pool's threads take the segments in whatever order they come free; with no least
// batch size (makeJob), the layout's three segments all run at once on three threads.
TEST_P(SessionIdentityTest, ServerThreadsChangeNoByteOfTheRun) {
  const auto& [method, shards, workers] = GetParam();
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  const Outcome one = runHub(methods, method, shards, workers, 1);
  {
    SCOPED_TRACE("real threads");
    expectSameRun(one, runHub(methods, method, shards, workers, 3), workers);
  }
  {
    SCOPED_TRACE("virtual job with timed threads");
    expectSameRun(one, runVirtual(methods, method, shards, workers, 3), workers);
  }
}

std::vector<std::tuple<std::string, int, int>> cases() {
  MethodRegistry methods;
  EXPECT_TRUE(registerBuiltinMethods(methods).ok());
  std::vector<std::tuple<std::string, int, int>> all;
  for (const std::string& method : methods.names()) {
    for (int shards : {1, 2}) {
      for (int workers : {1, 3}) all.emplace_back(method, shards, workers);
    }
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(
    EveryMethod, SessionIdentityTest, ::testing::ValuesIn(cases()),
    [](const ::testing::TestParamInfo<std::tuple<std::string, int, int>>& info) {
      return absl::StrCat(std::get<0>(info.param), "_", std::get<1>(info.param), "shards_",
                          std::get<2>(info.param), "workers");
    });

}  // namespace
}  // namespace sparseps

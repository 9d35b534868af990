// Rule checkpoints, server and worker: a saved state loaded into a fresh rule continues
// exactly like the original; bad bytes give a clear error and leave the rule as it was.

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "optim/builtin_methods.h"
#include "optim/method_registry.h"
#include "optim/segment_index.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

constexpr int kWorkers = 3;

struct Job {
  std::unique_ptr<ServerRule> server;
  std::unique_ptr<WorkerRule> worker;
  std::vector<float> W;
};

Job startJob(const std::string& name, const MethodOptions& o, std::mt19937_64& rng) {
  MethodRegistry registry;
  EXPECT_TRUE(registerBuiltinMethods(registry).ok());
  const Method& method = **registry.find(name);
  const CheckedOptions checked = method.check(MethodOptions(o).setNumWorkers(kWorkers)).value();
  Job run{method.makeServer(mixedSpecs(), checked),
          method.makeWorker(mixedSpecs(), checked),
          randomVector(rng, extent(mixedSpecs()))};
  return run;
}

// One push from worker k and its reply.
Message step(Job& run, int k, const std::vector<float>& grad) {
  Message push, reply;
  run.worker->makePush(grad, run.W, StepContext{}, &push);
  run.server->applyPush(k, push, 1.0f, absl::MakeSpan(run.W));
  run.server->makeReply(k, run.W, &reply);
  return reply;
}

TEST(StateTest, RoundTripContinuesIdentically) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  for (const std::string name : {"dgs", "gd", "asgd"}) {
    SCOPED_TRACE(name);
    std::mt19937_64 rng(seed);
    MethodOptions o;
    o.setResyncEvery(5).setDensity(0.1).setServerDensity(0.1).setDownlink(Downlink::kSparse);
    Job a = startJob(name, o, rng);
    for (int t = 0; t < 7; ++t) step(a, t % kWorkers, randomVector(rng, a.W.size()));

    const std::string bytes = a.server->saveState();
    Job b = startJob(name, o, rng);
    b.W = a.W;
    ASSERT_TRUE(b.server->loadState(bytes).ok()) << b.server->loadState(bytes);
    EXPECT_EQ(b.server->saveState(), bytes);
    // Pushes from a fresh worker of a's kind; both servers must answer alike.
    for (int t = 0; t < 8; ++t) {
      Message push;
      a.worker->makePush(randomVector(rng, a.W.size()), a.W, StepContext{}, &push);
      const int k = t % kWorkers;
      Message ra, rb;
      a.server->applyPush(k, push, 1.0f, absl::MakeSpan(a.W));
      b.server->applyPush(k, push, 1.0f, absl::MakeSpan(b.W));
      a.server->makeReply(k, a.W, &ra);
      b.server->makeReply(k, b.W, &rb);
      expectMessagesNear(rb, ra, "reply after restore, step " + std::to_string(t), 0.0f);
    }
  }
}

// Whether every compressed segment of a reply is dense (w = W_sync) or none is (deltas).
enum class Form { kDense, kSparse };
void expectCompressedSegments(const Message& reply, Form form, const std::string& what) {
  SegmentIndex index(mixedSpecs());
  for (const SegmentData& s : reply) {
    if (!index[static_cast<size_t>(index.find(s.segment_id))].compressed) continue;
    EXPECT_EQ(s.dense, form == Form::kDense) << what << ", segment " << s.segment_id;
  }
}

TEST(StateTest, AWorkerRestartedAfterARestoreGetsTheSyncModelFirst) {
  // After a resume every worker starts from the dense W, not from the W_sync + A_k the
  // restored state remembers; its next reply must be the dense W_sync (A_k = 0), or the
  // deltas that follow would land on the wrong model.
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  MethodOptions o;
  o.setResyncEvery(1000).setDensity(0.1).setServerDensity(0.1).setDownlink(Downlink::kSparse);
  Job a = startJob("dgs", o, rng);
  for (int t = 0; t < 7; ++t) {
    const Message reply = step(a, t % kWorkers, randomVector(rng, a.W.size()));
    // Each worker's first reply is dense, the later ones sparse.
    expectCompressedSegments(reply, t < kWorkers ? Form::kDense : Form::kSparse,
                             "step " + std::to_string(t));
  }

  Job b = startJob("dgs", o, rng);
  b.W = a.W;
  ASSERT_TRUE(b.server->loadState(a.server->saveState()).ok());
  b.server->onWorkerStart(1);
  expectCompressedSegments(step(b, 1, randomVector(rng, b.W.size())), Form::kDense,
                           "restarted worker's first reply");
  expectCompressedSegments(step(b, 1, randomVector(rng, b.W.size())), Form::kSparse,
                           "restarted worker's second reply");
  expectCompressedSegments(step(b, 0, randomVector(rng, b.W.size())), Form::kSparse,
                           "a worker that did not restart");
}

void expectLoadFails(ServerRule& rule, const std::string& bytes, const std::string& needle) {
  const std::string before = rule.saveState();
  absl::Status s = rule.loadState(bytes);
  EXPECT_FALSE(s.ok()) << "loaded bad bytes (" << needle << ")";
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
  EXPECT_EQ(rule.saveState(), before) << "a failed load changed the state (" << needle << ")";
}

TEST(StateTest, BadBytesGiveAClearErrorAndChangeNothing) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  MethodOptions o;
  o.setDensity(0.1).setServerDensity(0.1).setDownlink(Downlink::kSparse);
  Job run = startJob("dgs", o, rng);
  for (int t = 0; t < 4; ++t) step(run, t % kWorkers, randomVector(rng, run.W.size()));
  const std::string good = run.server->saveState();
  ServerRule& rule = *run.server;

  expectLoadFails(rule, "", "truncated");
  expectLoadFails(rule, "not a state at all", "bad magic");
  std::string version = good;
  version[4] = 9;
  expectLoadFails(rule, version, "format version");
  // Every truncation fails (sampled so the test stays quick).
  for (size_t len = 0; len < good.size(); len += 1 + good.size() / 97) {
    expectLoadFails(rule, good.substr(0, len), "truncated");
  }
  expectLoadFails(rule, good + "x", "unexpected bytes");
  // Header is 9 bytes, then worker count (u32).
  std::string workers = good;
  workers[9] = 7;
  expectLoadFails(rule, workers, "worker count");
  // A non-finite value in the last residual.
  std::string nan = good;
  const float bad = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&nan[nan.size() - 4], &bad, 4);
  expectLoadFails(rule, nan, "non-finite");

  // A dense-downlink state does not load into a dual-way rule, nor the other way round.
  Job dense = startJob("asgd", MethodOptions(), rng);
  expectLoadFails(rule, dense.server->saveState(), "kind");
  expectLoadFails(*dense.server, good, "kind");
  // Another layout.
  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  const Method& dgs = **registry.find("dgs");
  auto other = dgs.makeServer({SegmentSpec{10, 0, 120, true}},
                              dgs.check(MethodOptions(o).setNumWorkers(kWorkers)).value());
  expectLoadFails(*other, good, "segment count");

  ASSERT_TRUE(rule.loadState(good).ok());
}

std::unique_ptr<WorkerRule> makeWorker(const std::string& name, const MethodOptions& o,
                                       const SegmentSpecs& specs = mixedSpecs()) {
  MethodRegistry registry;
  EXPECT_TRUE(registerBuiltinMethods(registry).ok());
  const Method& method = **registry.find(name);
  return method.makeWorker(specs, method.check(o).value());
}

Message push(WorkerRule& worker, const std::vector<float>& grad, const std::vector<float>& w,
             uint64_t step) {
  Message out;
  worker.makePush(grad, w, StepContext{0.1f, 0, step}, &out);
  return out;
}

TEST(StateTest, WorkerStateRoundTripContinuesIdentically) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  // gd also with PowerSGD, whose warm-start Q is state, with and without error feedback.
  const std::vector<std::tuple<std::string, std::string, bool>> cases = {
      {"msgd", "", true}, {"asgd", "", true}, {"gd", "", true}, {"dgc", "", true},
      {"dgs", "", true}, {"gd", "powersgd:rank=2", true}, {"gd", "powersgd:rank=2", false}};
  for (const auto& [name, compressor, error_feedback] : cases) {
    SCOPED_TRACE(name + " " + compressor + (error_feedback ? "" : " without error feedback"));
    std::mt19937_64 rng(seed);
    MethodOptions o;
    o.setDensity(0.1).setWeightDecay(1e-3);
    o.gd.setCompressor(compressor).setErrorFeedback(error_feedback);
    const size_t n = extent(mixedSpecs());
    const std::vector<float> w = randomVector(rng, n);
    auto a = makeWorker(name, o);
    for (uint64_t t = 0; t < 5; ++t) push(*a, randomVector(rng, n), w, t);

    const std::string bytes = a->saveState();
    auto b = makeWorker(name, o);
    auto fresh = makeWorker(name, o);
    ASSERT_TRUE(b->loadState(bytes).ok()) << b->loadState(bytes);
    EXPECT_EQ(b->saveState(), bytes);
    bool differs_from_fresh = false;
    for (uint64_t t = 5; t < 9; ++t) {
      const std::vector<float> grad = randomVector(rng, n);
      const Message pa = push(*a, grad, w, t);
      expectMessagesNear(push(*b, grad, w, t), pa, "push after restore, step " + std::to_string(t),
                         0.0f);
      Message pf = push(*fresh, grad, w, t);
      for (size_t i = 0; i < pa.size(); ++i) {
        differs_from_fresh |= pa[i].indices != pf[i].indices || pa[i].values != pf[i].values ||
                              pa[i].params != pf[i].params;
      }
    }
    // Every method but asgd carries state from step to step: without it the pushes differ.
    EXPECT_EQ(differs_from_fresh, name != "asgd");
  }
}

TEST(StateTest, BadWorkerStateGivesAClearErrorAndChangesNothing) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  MethodOptions o;
  o.setDensity(0.1);
  auto worker = makeWorker("dgc", o);
  const std::vector<float> w = randomVector(rng, extent(mixedSpecs()));
  for (uint64_t t = 0; t < 3; ++t) push(*worker, randomVector(rng, w.size()), w, t);
  const std::string good = worker->saveState();

  auto expectFails = [&](const std::string& bytes, const std::string& needle) {
    absl::Status s = worker->loadState(bytes);
    EXPECT_FALSE(s.ok()) << "loaded bad bytes (" << needle << ")";
    EXPECT_NE(s.message().find(needle), std::string::npos) << s;
    EXPECT_EQ(worker->saveState(), good) << "a failed load changed the state (" << needle << ")";
  };
  expectFails("", "truncated");
  for (size_t len = 0; len < good.size(); len += 1 + good.size() / 97) {
    expectFails(good.substr(0, len), "truncated");
  }
  expectFails(good + "x", "unexpected bytes");
  std::string nan = good;
  const float bad = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&nan[nan.size() - 4], &bad, 4);
  expectFails(nan, "non-finite");
  // A server's state, another method's and another layout's are refused.
  Job job = startJob("dgc", o, rng);
  expectFails(job.server->saveState(), "kind");
  expectFails(makeWorker("dgs", o)->saveState(), "residual memory count");
  expectFails(makeWorker("dgc", o, {SegmentSpec{10, 0, 120, true}})->saveState(), "segment count");
  ASSERT_TRUE(worker->loadState(good).ok());
}

TEST(StateTest, APowersgdQOfAnotherRankIsRefusedAndChangesNothing) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  MethodOptions o;
  o.gd.setCompressor("powersgd:rank=2");
  auto worker = makeWorker("gd", o);
  const std::vector<float> w = randomVector(rng, extent(mixedSpecs()));
  for (uint64_t t = 0; t < 3; ++t) push(*worker, randomVector(rng, w.size()), w, t);
  const std::string good = worker->saveState();

  MethodOptions rank3 = o;
  rank3.gd.setCompressor("powersgd:rank=3");
  auto other = makeWorker("gd", rank3);
  push(*other, randomVector(rng, w.size()), w, 0);
  absl::Status s = worker->loadState(other->saveState());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("saved Q holds"), std::string::npos) << s;
  EXPECT_EQ(worker->saveState(), good) << "a failed load changed the state";

  // Another worker's Qs, but a Q for the last segment, which has none (1 element: rank 0):
  // the compressor refuses it after the first two segments took theirs, and those are
  // put back.
  auto another = makeWorker("gd", o);
  for (uint64_t t = 0; t < 2; ++t) push(*another, randomVector(rng, w.size()), w, t);
  std::string bytes = another->saveState();
  ASSERT_EQ(bytes.substr(bytes.size() - 8), std::string(8, '\0')) << "the last Q is not empty";
  bytes.resize(bytes.size() - 8);
  const uint64_t one = 1;  // little-endian, as the state format writes it
  const float value = 0.5f;
  bytes.append(reinterpret_cast<const char*>(&one), 8);
  bytes.append(reinterpret_cast<const char*>(&value), 4);
  s = worker->loadState(bytes);
  EXPECT_NE(s.message().find("segment 4's saved Q holds 1 values, this run's Q has 0"),
            std::string::npos)
      << s;
  EXPECT_EQ(worker->saveState(), good) << "the Qs restored before the refusal were kept";

  // A state without the compressor's (asgd's, into gd without error feedback: no other
  // state either side) is refused by the compressor count.
  MethodOptions no_feedback = o;
  no_feedback.gd.setErrorFeedback(false);
  s = makeWorker("gd", no_feedback)->loadState(makeWorker("asgd", o)->saveState());
  EXPECT_NE(s.message().find("compressor count"), std::string::npos) << s;
}

}  // namespace
}  // namespace sparseps::test

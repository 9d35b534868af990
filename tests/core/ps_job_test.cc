// Real multi-process jobs on loopback: 1 server and 4 workers as separate processes
// (ps_job_rank), Gloo over a FileStore, every method end to end, a worker killed mid-run,
// and a server killed mid-run then resumed from its checkpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "compressors/segment_spec.h"
#include "core/runtime/checkpoint.h"
#include "core/wire/wire_header.h"
#include "tests/transport/peer_process.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;
using Result = std::map<std::string, std::string>;
constexpr size_t kWeights = 64 * 8, kBiases = 8;

struct Job {
  std::vector<int> exit_codes;
  std::vector<Result> results;
};

class PsJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A parameterized test's name holds '/': one directory level, removed whole.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fs::temp_directory_path() / ("sparseps_psjob_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Starts every rank; `per_rank` adds arguments to one rank.
  std::vector<std::unique_ptr<testing::ChildProcess>> start(
      const std::string& run_id, const std::vector<std::string>& common,
      const std::map<int, std::vector<std::string>>& per_rank = {}, int world = 5) {
    fs::create_directories(dir_ / run_id);
    std::vector<std::unique_ptr<testing::ChildProcess>> ranks;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> argv = {SPARSEPS_PS_JOB_RANK, "--rank", std::to_string(r),
                                       "--world-size", std::to_string(world), "--store",
                                       (dir_ / run_id / "store").string(), "--run-id", run_id,
                                       "--out", outPath(run_id, r)};
      argv.insert(argv.end(), common.begin(), common.end());
      if (auto it = per_rank.find(r); it != per_rank.end()) {
        argv.insert(argv.end(), it->second.begin(), it->second.end());
      }
      ranks.push_back(std::make_unique<testing::ChildProcess>(argv));
    }
    return ranks;
  }

  Job finish(const std::string& run_id, std::vector<std::unique_ptr<testing::ChildProcess>>& ranks) {
    Job job;
    for (size_t r = 0; r < ranks.size(); ++r) {
      job.exit_codes.push_back(ranks[r]->wait(std::chrono::seconds(60)));
      job.results.push_back(readResult(outPath(run_id, static_cast<int>(r))));
    }
    return job;
  }

  Job run(const std::string& run_id, const std::vector<std::string>& common,
          const std::map<int, std::vector<std::string>>& per_rank = {}) {
    auto ranks = start(run_id, common, per_rank);
    return finish(run_id, ranks);
  }

  std::string outPath(const std::string& run_id, int rank) const {
    return (dir_ / run_id / ("rank" + std::to_string(rank) + ".txt")).string();
  }

  static Result readResult(const std::string& path) {
    Result result;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      auto eq = line.find('=');
      if (eq != std::string::npos) result[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return result;
  }

  fs::path dir_;
};

// Header + sparse weights as u32/f32 pairs + dense biases, each segment with its header.
size_t sparsePushBytes(double density) {
  return kHeaderBytes + kSegmentHeaderBytes + 8 * topkCount(kWeights, density) +
         kSegmentHeaderBytes + 4 * kBiases;
}
size_t densePushBytes() {
  return kHeaderBytes + kSegmentHeaderBytes + 4 * kWeights + kSegmentHeaderBytes + 4 * kBiases;
}

TEST_F(PsJobTest, EveryMethodTrainsWithOneServerAndFourWorkers) {
  for (const std::string method : {"msgd", "asgd", "gd", "dgc", "dgs"}) {
    SCOPED_TRACE(method);
    auto job = run(method, {"--method", method, "--steps", "100", "--density", "0.05"});
    for (int r = 0; r < 5; ++r) ASSERT_EQ(job.exit_codes[r], 0) << "rank " << r;
    const bool sparse = method == "gd" || method == "dgc" || method == "dgs";
    for (int r = 1; r < 5; ++r) {
      const Result& res = job.results[r];
      EXPECT_GE(std::stod(res.at("accuracy")), 0.9) << "worker rank " << r;
      const size_t push = sparse ? sparsePushBytes(0.05) : densePushBytes();
      EXPECT_EQ(std::stoul(res.at("bytes_up_min")), push);
      EXPECT_EQ(std::stoul(res.at("bytes_up_max")), push);
      if (method == "asgd" || method == "msgd") {
        EXPECT_EQ(std::stoul(res.at("bytes_down_mean")), densePushBytes());  // the dense W
      }
      if (method == "dgs") {  // the dual-way sparse reply, with a dense resync now and then
        EXPECT_LT(std::stoul(res.at("bytes_down_mean")), densePushBytes() / 2);
      }
    }
  }
}

TEST_F(PsJobTest, SyncModeTrains) {
  auto job = run("sync", {"--method", "dgs", "--mode", "sync", "--steps", "60"});
  for (int r = 0; r < 5; ++r) ASSERT_EQ(job.exit_codes[r], 0) << "rank " << r;
  for (int r = 1; r < 5; ++r) EXPECT_GE(std::stod(job.results[r].at("accuracy")), 0.9);
}

TEST_F(PsJobTest, TwoServerShardsServeOneModel) {
  std::vector<std::unique_ptr<testing::ChildProcess>> ranks =
      start("shards", {"--method", "dgs", "--servers", "2", "--steps", "100"}, {}, 6);
  auto job = finish("shards", ranks);
  for (int r = 0; r < 6; ++r) ASSERT_EQ(job.exit_codes[r], 0) << "rank " << r;
  for (int r = 2; r < 6; ++r) EXPECT_GE(std::stod(job.results[r].at("accuracy")), 0.9);
}

TEST_F(PsJobTest, AKilledWorkerIsDroppedAndTheJobFinishes) {
  auto job = run("kill", {"--method", "dgs", "--steps", "100"}, {{2, {"--die-at", "30"}}});
  EXPECT_EQ(job.exit_codes[0], 0);
  EXPECT_EQ(job.results[0].at("dropped"), "1");
  EXPECT_EQ(job.exit_codes[2], 128 + SIGKILL);
  for (int r : {1, 3, 4}) {
    EXPECT_EQ(job.exit_codes[r], 0) << "rank " << r;
    EXPECT_GE(std::stod(job.results[r].at("accuracy")), 0.9);
  }
}

TEST_F(PsJobTest, AServerKilledMidRunResumesFromItsCheckpoint) {
  const std::string checkpoint = (dir_ / "ckpt").string();
  const std::string shard0 = checkpoint + ".shard0";
  // Workers run far longer than the server lives.
  auto ranks = start("first", {"--method", "dgs", "--steps", "100000", "--checkpoint", checkpoint});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(shard0) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(fs::exists(shard0));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ranks[0]->killNow();
  auto killed = finish("first", ranks);
  for (int r = 1; r < 5; ++r) EXPECT_NE(killed.exit_codes[r], 0) << "workers notice the dead server";

  auto saved = loadCheckpoint(shard0);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_GT(saved->version, 0u);

  auto resumed = run("second", {"--method", "dgs", "--steps", "10", "--checkpoint", checkpoint,
                                "--resume"});
  for (int r = 0; r < 5; ++r) ASSERT_EQ(resumed.exit_codes[r], 0) << "rank " << r;
  for (int r = 1; r < 5; ++r) {
    EXPECT_EQ(std::stoull(resumed.results[r].at("start_version")), saved->version);
  }
  auto final_state = loadCheckpoint(shard0);
  ASSERT_TRUE(final_state.ok());
  EXPECT_EQ(final_state->version, saved->version + 4 * 10);  // nothing lost, all applied
}

// A rank that breaks the protocol in one way joins a job of 1 server and 2 honest
// workers (rogue_rank.cc says how in each mode). The server drops it, naming why, within
// the peer timeout of its misbehaviour, and never dies of it; the honest workers finish
// and their model is trained.
struct RogueCase {
  const char* rogue;
  const char* mode;
  const char* reason;  // in the server's dropped_reason (one of those split by '|')
};

class RoguePeerTest : public PsJobTest, public ::testing::WithParamInterface<RogueCase> {};

TEST_P(RoguePeerTest, IsDroppedAndTheJobFinishesWithoutIt) {
  const RogueCase& c = GetParam();
  const std::string run_id = std::string("rogue-") + c.rogue;
  const std::vector<std::string> common = {"--method", "asgd", "--mode", c.mode,
                                           "--peer-timeout-ms", "1000", "--steps", "60",
                                           "--compute-ms", "20",
                                           "--connect-timeout-ms", "4000",
                                           "--run-secret", "s3cret"};
  const auto start = std::chrono::steady_clock::now();
  fs::create_directories(dir_ / run_id);
  std::vector<std::unique_ptr<testing::ChildProcess>> ranks;
  for (int r = 0; r < 3; ++r) {
    std::vector<std::string> argv = {SPARSEPS_PS_JOB_RANK, "--rank", std::to_string(r),
                                     "--world-size", "4", "--store",
                                     (dir_ / run_id / "store").string(), "--run-id", run_id,
                                     "--out", outPath(run_id, r)};
    argv.insert(argv.end(), common.begin(), common.end());
    ranks.push_back(std::make_unique<testing::ChildProcess>(argv));
  }
  testing::ChildProcess rogue({SPARSEPS_ROGUE_RANK, "--rank", "3", "--world-size", "4",
                               "--store", (dir_ / run_id / "store").string(), "--run-id",
                               run_id, "--mode", c.mode, "--peer-timeout-ms", "1000",
                               "--run-secret", "s3cret", "--rogue", c.rogue});
  Job job = finish(run_id, ranks);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(job.exit_codes[0], 0) << "the server survives";
  EXPECT_EQ(job.results[0].at("dropped"), "1");
  const std::string reason = job.results[0].at("dropped_reason");
  EXPECT_TRUE(absl::c_any_of(absl::StrSplit(c.reason, '|'), [&](absl::string_view r) {
    return absl::StrContains(reason, r);
  })) << reason;
  for (int r = 1; r < 3; ++r) {
    ASSERT_EQ(job.exit_codes[r], 0) << "worker rank " << r;
    EXPECT_GE(std::stod(job.results[r].at("accuracy")), 0.9) << "worker rank " << r;
  }
  std::printf("rogue %s (%s): dropped for \"%s\"; the honest workers' accuracy %s and %s\n",
              c.rogue, c.mode, reason.c_str(), job.results[1].at("accuracy").c_str(),
              job.results[2].at("accuracy").c_str());
  EXPECT_LT(seconds, 30.0);
}

INSTANTIATE_TEST_SUITE_P(
    Rogues, RoguePeerTest,
    ::testing::Values(
        RogueCase{"header-only", "async", "sent a header and not its 2106-byte payload"},
        RogueCase{"slow-payload", "async", "sent a header and not its 45-byte payload"},
        RogueCase{"no-read", "async", "left a message untaken"},
        RogueCase{"push-unread", "async", "left a message untaken"},
        RogueCase{"silent", "sync", "held a sync round for 1 s without pushing"},
        RogueCase{"silent", "async", "made no push for 4."},
        RogueCase{"poison", "async", "is beyond the bound 2^64"},
        RogueCase{"huge", "async", "is over 10000 times the median largest value"},
        RogueCase{"garbage", "async", "checksum"},
        RogueCase{"replay", "async", "push of its step 0 where step 1 is next"},
        RogueCase{"overlong", "async", "sent a payload longer than"},
        RogueCase{"short", "async", "sent a payload shorter than"},
        RogueCase{"bad-then-good", "async", "checksum"},
        RogueCase{"stop", "async", "sent no message and no pulse"},
        RogueCase{"no-secret", "async", "did not present this run's secret"},
        RogueCase{"mute", "async", "did not complete the handshake"},
        RogueCase{"oversized", "async", "broke Gloo's framing"},
        RogueCase{"fast", "async", "steps beyond the 60 of the workers that finished"},
        RogueCase{"fast", "sync", "steps beyond the 60 of the workers that finished"},
        RogueCase{"fast", "staleness", "steps beyond the 60 of the workers that finished"},
        RogueCase{"fastsmall", "async", "steps beyond the 60 of the workers that finished"},
        RogueCase{"fastsmall", "sync", "steps beyond the 60 of the workers that finished"},
        RogueCase{"fastsmall", "staleness", "steps beyond the 60 of the workers that finished"},
        RogueCase{"doubling", "async", "steps beyond the 60 of the workers that finished"},
        RogueCase{"firstpoison", "async", "a poisoned or diverged push"}),
    [](const ::testing::TestParamInfo<RogueCase>& info) {
      std::string name = info.param.rogue;
      name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
      if (std::string(info.param.mode) != "async") name += info.param.mode;
      return name;
    });

// The contrast for the push guard's clip rule: with --push-guard=refuse, the same rank that
// pushes 0.004 everywhere without computing (RoguePeerTest.*/fastsmall), while the honest
// workers compute for 20 ms a step, is never refused and steers the model the honest workers
// end with. (It never stops, so the server is killed.)
TEST_F(PsJobTest, WithoutTheClipRuleARankThatPushesWithoutComputingSteersTheModel) {
  const std::string run_id = "steered";
  fs::create_directories(dir_ / run_id);
  std::vector<std::unique_ptr<testing::ChildProcess>> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(std::make_unique<testing::ChildProcess>(std::vector<std::string>{
        SPARSEPS_PS_JOB_RANK, "--rank", std::to_string(r), "--world-size", "4", "--store",
        (dir_ / run_id / "store").string(), "--run-id", run_id, "--out", outPath(run_id, r),
        "--method", "asgd", "--steps", "60", "--compute-ms", "20", "--run-secret", "s3cret",
        "--push-guard", "refuse"}));
  }
  testing::ChildProcess rogue({SPARSEPS_ROGUE_RANK, "--rank", "3", "--world-size", "4",
                               "--store", (dir_ / run_id / "store").string(), "--run-id",
                               run_id, "--run-secret", "s3cret", "--rogue", "fastsmall"});
  for (int r = 1; r < 3; ++r) {
    ASSERT_EQ(ranks[r]->wait(std::chrono::seconds(60)), 0) << "worker rank " << r;
    // Under the 0.9 every guarded job reaches (0.54 in runs here; 0.89 to 0.90 when the
    // honest workers computed 5 ms a step on a busy machine).
    const std::string accuracy = readResult(outPath(run_id, r)).at("accuracy");
    EXPECT_LT(std::stod(accuracy), 0.9) << "worker rank " << r;
    std::printf("worker rank %d's accuracy with the steering rank: %s\n", r, accuracy.c_str());
  }
}

// A worker that never starts: the server starts with the two that came once the connect
// timeout has passed, names the missing one, and the job trains without it. The workers,
// connected long before, wait for the server's handshake longer than a peer timeout.
TEST_F(PsJobTest, AWorkerThatNeverStartsIsDroppedAndTheOthersTrain) {
  const std::string run_id = "absent-worker";
  const std::vector<std::string> common = {"--method", "asgd", "--steps", "60",
                                           "--connect-timeout-ms", "1500",
                                           "--peer-timeout-ms", "500"};
  auto ranks = start(run_id, common, {}, /*world=*/4);
  ranks.back()->killNow();  // rank 3, before it can publish anything (or, rarely, just after)
  ranks.pop_back();
  Job job = finish(run_id, ranks);
  ASSERT_EQ(job.exit_codes[0], 0) << job.results[0]["error"];
  EXPECT_EQ(job.results[0].at("dropped"), "1");
  EXPECT_NE(job.results[0].at("dropped_reason").find("rank 3 is missing"), std::string::npos)
      << job.results[0].at("dropped_reason");
  for (int r = 1; r < 3; ++r) {
    ASSERT_EQ(job.exit_codes[r], 0) << "worker rank " << r;
    EXPECT_GE(std::stod(job.results[r].at("accuracy")), 0.9) << "worker rank " << r;
  }
}

// A second process claims rank 3: the server connects one of the two, the other fails
// alone once the connect timeout has passed, and the job finishes with every rank trained.
TEST_F(PsJobTest, ASecondProcessClaimingATakenRankLeavesTheJobGoingOn) {
  const std::string run_id = "taken-rank";
  const std::vector<std::string> common = {"--method", "asgd", "--steps", "60",
                                           "--connect-timeout-ms", "1500"};
  auto ranks = start(run_id, common, {}, /*world=*/4);
  testing::ChildProcess twin({SPARSEPS_PS_JOB_RANK, "--rank", "3", "--world-size", "4",
                              "--store", (dir_ / run_id / "store").string(), "--run-id", run_id,
                              "--out", (dir_ / run_id / "twin.txt").string(), "--method", "asgd",
                              "--steps", "60", "--connect-timeout-ms", "1500"});
  Job job = finish(run_id, ranks);
  const int twin_code = twin.wait(std::chrono::seconds(60));
  ASSERT_EQ(job.exit_codes[0], 0) << job.results[0]["error"];
  for (int r = 1; r < 3; ++r) {
    ASSERT_EQ(job.exit_codes[r], 0) << "worker rank " << r;
    EXPECT_GE(std::stod(job.results[r].at("accuracy")), 0.9) << "worker rank " << r;
  }
  EXPECT_EQ((job.exit_codes[3] == 0) + (twin_code == 0), 1)
      << "rank 3 exited " << job.exit_codes[3] << ", its twin " << twin_code;
}

// Without the server the workers fail once the connect timeout has passed, naming it.
TEST_F(PsJobTest, WorkersWithoutTheServerFailNamingIt) {
  const std::string run_id = "absent-server";
  const std::vector<std::string> common = {"--method", "asgd", "--connect-timeout-ms", "1000"};
  auto ranks = start(run_id, common, {}, /*world=*/3);
  ranks.front()->killNow();  // before it publishes its address (or, rarely, just after)
  const auto begin = std::chrono::steady_clock::now();
  for (int r = 1; r < 3; ++r) {
    EXPECT_EQ(ranks[r]->wait(std::chrono::seconds(30)), 3) << "worker rank " << r;
    const std::string error = readResult(outPath(run_id, r))["error"];
    EXPECT_NE(error.find("could not connect: rank 0 "), std::string::npos) << error;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(10));
}

}  // namespace
}  // namespace sparseps

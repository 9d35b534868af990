// A job stopped from outside, through experiments/run: Ctrl-C (the launcher stops every
// rank with a signal) keeps every finished step's metrics line, and a server killed
// mid-run leaves a checkpoint and the --resume command that continues from it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <numeric>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/experiments/launcher.h"
#include "tests/temp_dir.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// 2 workers of asgd over 20 Mbit/s links: a dense push and reply of small_resnet take about
// 0.25 s, so an epoch (32 steps a worker) lasts seconds, and a server checkpoint every 4
// versions is on disk long before the job ends.
std::string slowJob(const fs::path& out, int world_size = 3) {
  return "--method=asgd --dataset=synthetic --model=small_resnet --world-size=" +
         std::to_string(world_size) +
         " --batch-size=64 --bandwidth=20mbit --threads=1 --eval-bn-batches=0 "
         "--checkpoint-every=4 --progress=none --out=" +
         out.string();
}

TEST(DriverStopTest, CtrlCKeepsEveryFinishedStepsMetricsLine) {
  testing::TempDir dir("sparseps_driver_stop_");
  const fs::path out = dir.path() / "run";
  BackgroundJob job(slowJob(out) + " --epochs=1", dir.path());
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "checkpoint.shard0"); }, 60)) << job.text();
  // The launcher's Ctrl-C path: every rank stopped by a signal, inside the first epoch.
  // The launcher itself (python3 runs it), not the shell or timeout around it.
  const std::string launcher = "python3 [^ ]*experiments/run .*--out=" + out.string() + " ";
  ASSERT_EQ(std::system(("pkill -INT -f -- '" + launcher + "'").c_str()), 0);
  EXPECT_EQ(job.wait(60), 128 + 2) << job.text();
  EXPECT_FALSE(fs::exists(out / "summary.json")) << "the job was to be stopped mid-run";

  // At least version 4 was checkpointed: both workers had finished steps, and each
  // worker's lines are its steps 1, 2, ... with none missing.
  std::map<int, int> last_step;
  std::ifstream metrics(out / "metrics.jsonl");
  std::string line;
  while (std::getline(metrics, line)) {
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(row.is_discarded()) << "a torn line: " << line;
    const int worker = row["worker"].get<int>();
    EXPECT_EQ(row["step"].get<int>(), last_step[worker] + 1) << "worker " << worker;
    last_step[worker] = row["step"].get<int>();
  }
  EXPECT_EQ(last_step.size(), 2u) << "every worker's finished steps are on disk";
}

TEST(DriverStopTest, AKilledServerLeavesTheResumeCommandAndItContinuesTheRun) {
  testing::TempDir dir("sparseps_driver_stop_");
  const fs::path out = dir.path() / "run";
  BackgroundJob job(slowJob(out) + " --epochs=1 --max-steps=16", dir.path());
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "checkpoint.shard0"); }, 60)) << job.text();
  killRank(0, out);
  EXPECT_EQ(job.wait(60), 1) << job.text();
  const std::string text = job.text();
  EXPECT_THAT(text, HasSubstr("rank 0 failed (signal 9)"));
  const std::string intro = "continue the run with:\n  ";
  const size_t at = text.find(intro);
  ASSERT_NE(at, std::string::npos) << text;
  const std::string command = text.substr(at + intro.size(), text.find('\n', at + intro.size()) -
                                                                 (at + intro.size()));
  EXPECT_THAT(command, HasSubstr("--out=" + out.string() + " --resume"));

  // The printed command, as a user would paste it in the repository, continues the run.
  const std::string again = "cd " + std::string(SPARSEPS_SOURCE_DIR) + " && SPARSEPS_DRIVER=" +
                            SPARSEPS_DRIVER_BINARY + " timeout -k 5 120 " + command + " > " +
                            (dir.path() / "resumed.out").string() + " 2>&1";
  EXPECT_EQ(std::system(again.c_str()), 0) << readText(dir.path() / "resumed.out");
  EXPECT_TRUE(fs::exists(out / "summary.json"));

  // Each worker goes on after the pushes of its own the checkpoint holds: together they
  // are every push of the checkpoint (asgd applies each push as one version), so no batch
  // is trained twice or skipped.
  const std::regex started("from server version ([0-9]+), starting at epoch 0 batch ([0-9]+)");
  uint64_t version = 0, batches = 0;
  for (int rank : {1, 2}) {
    const std::string log = readText(out / "logs" / ("rank" + std::to_string(rank) + ".log"));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(log, m, started)) << log;
    version = std::stoull(m[1]);
    batches += std::stoull(m[2]);
  }
  EXPECT_GE(version, 4u);
  EXPECT_EQ(batches, version);

  // metrics.jsonl goes on at the seam: each worker's lines are its steps 1, 2, ... once each
  // (the lines of steps after the checkpoint were cut, and trained again), in time order;
  // the resumed attempt trained 16 more steps (--max-steps caps each attempt).
  std::map<int, std::vector<int>> steps;
  std::map<int, double> last_time;
  std::ifstream metrics(out / "metrics.jsonl");
  std::string line;
  while (std::getline(metrics, line)) {
    const nlohmann::json row = nlohmann::json::parse(line);
    const int worker = row["worker"].get<int>();
    steps[worker].push_back(row["step"].get<int>());
    EXPECT_GE(row["time"].get<double>(), last_time[worker]) << line;
    last_time[worker] = row["time"].get<double>();
  }
  for (int worker : {0, 1}) {
    ASSERT_GT(steps[worker].size(), 16u);
    std::vector<int> consecutive(steps[worker].size());
    std::iota(consecutive.begin(), consecutive.end(), 1);
    EXPECT_EQ(steps[worker], consecutive) << "worker " << worker;
  }
  // The summary counts the run's updates, both attempts': one per step line.
  const nlohmann::json summary = readJson(out / "summary.json");
  EXPECT_EQ(summary["updates"].get<size_t>(), steps[0].size() + steps[1].size());
}

TEST(DriverStopTest, AKilledWorkerLeavesTheOthersToFinishAndTheSummaryNamesIt) {
  testing::TempDir dir("sparseps_driver_stop_");
  const fs::path out = dir.path() / "run";
  BackgroundJob job(slowJob(out, 4) + " --epochs=1 --max-steps=12", dir.path());
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "checkpoint.shard0"); }, 60)) << job.text();
  killRank(2, out);  // the second of three workers
  EXPECT_EQ(job.wait(90), 0) << job.text();
  const std::string text = job.text();
  EXPECT_THAT(text, HasSubstr("worker rank 2 failed (signal 9); the job goes on without it"));
  EXPECT_THAT(text, HasSubstr("the job finished without worker rank(s) [2]"));
  const nlohmann::json summary = readJson(out / "summary.json");
  ASSERT_EQ(summary["dropped_workers"].size(), 1u) << summary.dump();
  EXPECT_EQ(summary["dropped_workers"][0]["worker"], 1);
  EXPECT_EQ(summary["dropped_workers"][0]["rank"], 2);
  EXPECT_GT(summary["dropped_workers"][0]["seconds"].get<double>(), 0.0);
  EXPECT_THAT(text, HasSubstr("dropped        worker 1 (rank 2) after"));
  // The survivors ran their course: 12 steps each.
  std::map<int, int> steps;
  std::ifstream metrics(out / "metrics.jsonl");
  std::string line;
  while (std::getline(metrics, line)) ++steps[nlohmann::json::parse(line)["worker"].get<int>()];
  EXPECT_EQ(steps[0], 12);
  EXPECT_EQ(steps[2], 12);
  EXPECT_LT(steps[1], 12);
}

// A worker stopped for good (SIGSTOP) is dropped by the server when its pulses stop; the
// others finish and the summary is written; the launcher then kills the stopped rank and
// exits instead of waiting for it forever.
TEST(DriverStopTest, AStoppedWorkerDoesNotKeepTheLauncherWaiting) {
  testing::TempDir dir("sparseps_driver_stop_");
  const fs::path out = dir.path() / "run";
  BackgroundJob job(slowJob(out, 4) + " --epochs=1 --max-steps=12 --peer-timeout=2",
                    dir.path());
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "checkpoint.shard0"); }, 60)) << job.text();
  killRank(2, out, "STOP");
  EXPECT_EQ(job.wait(90), 0) << job.text();
  const std::string text = job.text();
  EXPECT_THAT(text, HasSubstr("rank 2 still ran 10 s after the servers ended and wrote the "
                              "summary (stopped or hung): killed"));
  const nlohmann::json summary = readJson(out / "summary.json");
  ASSERT_EQ(summary["dropped_workers"].size(), 1u) << summary.dump();
  EXPECT_EQ(summary["dropped_workers"][0]["rank"], 2);
  EXPECT_THAT(summary["dropped_workers"][0]["reason"].get<std::string>(),
              HasSubstr("no message and no pulse"));
}

// The server stopped for longer than the peer timeout: the workers drop it and fail; the
// server, running again, blames none of them for its own silence, and the launcher says no
// worker finished and exits 5 instead of reporting a finished run.
TEST(DriverStopTest, AStalledServerIsNotReportedAsAFinishedRunWithSilentWorkers) {
  testing::TempDir dir("sparseps_driver_stop_");
  const fs::path out = dir.path() / "run";
  BackgroundJob job(slowJob(out) + " --epochs=1 --peer-timeout=2", dir.path());
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "checkpoint.shard0"); }, 60)) << job.text();
  killRank(0, out, "STOP");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  killRank(0, out, "CONT");
  EXPECT_EQ(job.wait(90), 5) << job.text();
  const std::string text = job.text();
  EXPECT_THAT(text, HasSubstr("no worker finished: the servers dropped every one"));
  EXPECT_THAT(text, HasSubstr("rank 0 is dropped: it sent no message and no pulse"))
      << "a worker's error names the stalled server";
  const nlohmann::json summary = readJson(out / "summary.json");
  ASSERT_EQ(summary["dropped_workers"].size(), 2u) << summary.dump();
  for (const auto& d : summary["dropped_workers"]) {
    EXPECT_THAT(d["reason"].get<std::string>(), Not(HasSubstr("no pulse")))
        << "the server's own silence is not the workers'";
  }
}

// One run directory, one launcher: a second launch into it, a moment after the first, is
// refused before it writes anything, and the first run goes on untouched.
TEST(DriverStopTest, ASecondLauncherOnARunDirectoryInUseIsRefusedAndTouchesNothing) {
  testing::TempDir dir("sparseps_driver_stop_");
  const fs::path out = dir.path() / "run";
  fs::create_directories(dir.path() / "first");
  fs::create_directories(dir.path() / "second");
  BackgroundJob first(slowJob(out) + " --epochs=1 --max-steps=12", dir.path() / "first");
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "logs" / "rank0.log"); }, 60))
      << first.text();
  BackgroundJob second(slowJob(out) + " --epochs=1", dir.path() / "second");
  EXPECT_EQ(second.wait(60), 2) << second.text();
  EXPECT_THAT(second.text(), HasSubstr(" is in use: another launcher (pid "));
  EXPECT_EQ(first.wait(90), 0) << first.text();
  EXPECT_FALSE(fs::exists(out / "logs" / "rank0.1.log")) << "the first run's log was moved";
  EXPECT_TRUE(fs::exists(out / "summary.json"));
}

TEST(DriverStopTest, AnOutThatCannotBeCreatedIsOneLineNotATraceback) {
  testing::TempDir dir("sparseps_driver_stop_");
  BackgroundJob job(slowJob("/proc/sparseps-no-such-dir/run"), dir.path());
  EXPECT_EQ(job.wait(60), 2) << job.text();
  EXPECT_THAT(job.text(), HasSubstr("cannot create the run directory /proc/sparseps-no-such-dir/run"));
  EXPECT_THAT(job.text(), Not(HasSubstr("Traceback")));
}

TEST(DriverStopTest, StopOnFailureStopsEveryRankWhenAWorkerFails) {
  testing::TempDir dir("sparseps_driver_stop_");
  const fs::path out = dir.path() / "run";
  BackgroundJob job(slowJob(out, 4) + " --epochs=1 --max-steps=12 --stop-on-failure",
                    dir.path());
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "checkpoint.shard0"); }, 60)) << job.text();
  killRank(2, out);
  EXPECT_EQ(job.wait(60), 1) << job.text();
  EXPECT_THAT(job.text(), HasSubstr("rank 2 failed (signal 9)"));
  EXPECT_THAT(job.text(), HasSubstr("stopped the other ranks"));
  EXPECT_FALSE(fs::exists(out / "summary.json"));
}

}  // namespace
}  // namespace sparseps

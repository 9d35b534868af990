// experiments/run --net=netns: every rank on a network namespace host of its own, links
// shaped by tc. A job trains across the hosts and leaves none behind; a worker killed on its
// host is dropped as on loopback; Ctrl-C stops the job and removes the hosts; a launcher
// killed mid-run leaves hosts that the next run's start removes. Needs root, ip and tc;
// skipped with the reason otherwise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/experiments/launcher.h"
#include "tests/temp_dir.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string why_not_here() {
  if (geteuid() != 0) return "needs root to create network namespaces";
  if (std::system("command -v ip >/dev/null && command -v tc >/dev/null") != 0) {
    return "needs ip and tc (iproute2)";
  }
  return "";
}

std::vector<std::string> namespaces() {
  std::vector<std::string> names;
  if (FILE* p = popen("ip netns list", "r")) {
    char line[256];
    while (fgets(line, sizeof line, p)) {
      std::istringstream words(line);
      std::string name;
      if (words >> name) names.push_back(name);
    }
    pclose(p);
  }
  return names;
}

// The names of the hosts the launcher said it made ("sps<pid>h0..."): their common prefix.
std::string clusterOf(const std::string& launcher_output) {
  std::smatch m;
  if (!std::regex_search(launcher_output, m, std::regex("(sps[0-9]+)h0\\.\\."))) return "";
  return m[1];
}

int namespacesOf(const std::string& cluster) {
  int n = 0;
  for (const std::string& name : namespaces()) n += name.rfind(cluster, 0) == 0;
  return n;
}

// 1 server and `workers` workers of asgd over 20 Mbit/s tc links: a dense push and reply of
// small_resnet take about 0.25 s, so a job of 12 steps lasts seconds.
std::string netnsJob(const fs::path& out, int workers, int steps) {
  return "--net=netns --method=asgd --dataset=synthetic --model=small_resnet --world-size=" +
         std::to_string(workers + 1) + " --max-steps=" + std::to_string(steps) +
         " --epochs=1 --batch-size=64 --bandwidth=20mbit --threads=1 --eval-bn-batches=0 "
         "--checkpoint-every=4 --progress=none --out=" + out.string();
}

// Without ip and tc on the PATH (or without root) the launcher says what is missing in one
// line and starts nothing: no run directory, no host.
TEST(NetnsClusterRefusal, WithoutRootIpOrTcItIsOneLineAndNothingStarts) {
  testing::TempDir dir("sparseps_netns_");
  const fs::path out = dir.path() / "run";
  const Result result = runLauncher(netnsJob(out, 2, 4), dir.path(), "PATH=/usr/bin:/bin");
  EXPECT_EQ(result.exit_code, 2);
  // Debian keeps tc in /usr/sbin only.
  EXPECT_THAT(result.output, HasSubstr(geteuid() == 0 ? "--net=netns needs tc (iproute2"
                                                      : "--net=netns needs root"));
  EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
  EXPECT_FALSE(fs::exists(out));
}

class NetnsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = why_not_here(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(NetnsClusterTest, ThreeHostsTrainAndNoneIsLeftBehind) {
  testing::TempDir dir("sparseps_netns_");
  const fs::path out = dir.path() / "run";
  const Result result = runLauncher(netnsJob(out, 2, 4), dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("3 netns hosts"));
  EXPECT_THAT(result.output, HasSubstr("(netns hosts, links shaped by tc)"));
  const nlohmann::json summary = readJson(out / "summary.json");
  EXPECT_EQ(summary["network"], "netns");
  EXPECT_EQ(summary["bandwidth"], "20mbit");
  EXPECT_EQ(summary["updates"], 8) << "4 steps of each of the 2 workers";
  EXPECT_TRUE(summary["dropped_workers"].empty()) << summary.dump();
  // Each rank reached the others at its host's address, not over a shared loopback.
  EXPECT_THAT(readText(out / "logs" / "rank1.log"), Not(HasSubstr("error")));
  const std::string cluster = clusterOf(result.output);
  ASSERT_FALSE(cluster.empty()) << result.output;
  EXPECT_EQ(namespacesOf(cluster), 0) << "the hosts outlived the run";
}

TEST_F(NetnsClusterTest, AWorkerKilledOnItsHostIsDroppedAndTheOthersFinish) {
  testing::TempDir dir("sparseps_netns_");
  const fs::path out = dir.path() / "run";
  BackgroundJob job(netnsJob(out, 3, 12), dir.path());
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "checkpoint.shard0"); }, 60)) << job.text();
  killRank(2, out);  // the second of three workers, on host 2
  EXPECT_EQ(job.wait(90), 0) << job.text();
  const std::string text = job.text();
  EXPECT_THAT(text, HasSubstr("worker rank 2 failed (signal 9); the job goes on without it"));
  const nlohmann::json summary = readJson(out / "summary.json");
  ASSERT_EQ(summary["dropped_workers"].size(), 1u) << summary.dump();
  EXPECT_EQ(summary["dropped_workers"][0]["rank"], 2);
  std::map<int, int> steps;
  for (const nlohmann::json& row : readLines(out / "metrics.jsonl")) {
    ++steps[row["worker"].get<int>()];
  }
  EXPECT_EQ(steps[0], 12);
  EXPECT_EQ(steps[2], 12);
  EXPECT_LT(steps[1], 12);
  EXPECT_EQ(namespacesOf(clusterOf(text)), 0);
}

TEST_F(NetnsClusterTest, CtrlCStopsEveryRankAndRemovesTheHosts) {
  testing::TempDir dir("sparseps_netns_");
  const fs::path out = dir.path() / "run";
  BackgroundJob job(netnsJob(out, 2, 200), dir.path());
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "checkpoint.shard0"); }, 60)) << job.text();
  const std::string cluster = clusterOf(job.text());
  ASSERT_FALSE(cluster.empty()) << job.text();
  EXPECT_EQ(namespacesOf(cluster), 4) << "3 hosts and the switch while the job runs";
  const std::string launcher = "python3 [^ ]*experiments/run .*--out=" + out.string();
  ASSERT_EQ(std::system(("pkill -INT -f -- '" + launcher + "'").c_str()), 0);
  EXPECT_EQ(job.wait(60), 128 + 2) << job.text();
  EXPECT_EQ(namespacesOf(cluster), 0) << "Ctrl-C left hosts behind";
}

TEST_F(NetnsClusterTest, AKilledLaunchersHostsAreRemovedWhenTheNextRunStarts) {
  testing::TempDir dir("sparseps_netns_");
  const fs::path killed_out = dir.path() / "killed";
  const fs::path killed_dir = dir.path() / "first";
  fs::create_directories(killed_dir);
  BackgroundJob killed(netnsJob(killed_out, 2, 200), killed_dir);
  ASSERT_TRUE(waitFor([&] { return fs::exists(killed_out / "checkpoint.shard0"); }, 60))
      << killed.text();
  // The launcher itself (python3 runs it), with no chance to clean up.
  const std::string launcher = "python3 [^ ]*experiments/run .*--out=" + killed_out.string();
  ASSERT_EQ(std::system(("pkill -KILL -f -- '" + launcher + "'").c_str()), 0);
  killed.wait(30);
  const std::string cluster = clusterOf(killed.text());
  ASSERT_FALSE(cluster.empty()) << killed.text();
  EXPECT_EQ(namespacesOf(cluster), 4) << "a killed launcher removes nothing itself (3 hosts "
                                          "and the switch)";

  const Result next = runLauncher(netnsJob(dir.path() / "next", 1, 2), dir.path());
  ASSERT_EQ(next.exit_code, 0) << next.output;
  EXPECT_THAT(next.output, HasSubstr("removed " + cluster + "h0, left by a launcher that was "
                                     "killed"));
  EXPECT_EQ(namespacesOf(cluster), 0);
  EXPECT_EQ(namespacesOf(clusterOf(next.output)), 0);
}

}  // namespace
}  // namespace sparseps

// experiments/run and sparseps_driver end to end: a small synthetic job (1 server, 2
// workers, loopback, unshaped) must leave a complete run directory and learn, and resume
// with every worker's state; bad flags, damaged checkpoints and missing data must fail
// with a message that says what to do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace sparseps {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Result {
  int exit_code = -1;
  std::string output;
};

// Runs experiments/run with `args` under a hard time limit (the test never hangs).
Result runLauncher(const std::string& args, const fs::path& dir) {
  const fs::path log = dir / "launcher.out";
  const std::string command = "cd " + dir.string() + " && SPARSEPS_DRIVER=" +
                              SPARSEPS_DRIVER_BINARY + " timeout -k 5 150 " +
                              SPARSEPS_SOURCE_DIR + "/experiments/run " + args + " > " +
                              log.string() + " 2>&1";
  Result result;
  const int status = std::system(command.c_str());
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream file(log);
  std::stringstream text;
  text << file.rdbuf();
  result.output = text.str();
  return result;
}

nlohmann::json readJson(const fs::path& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "missing " << path;
  return nlohmann::json::parse(file, nullptr, false);
}

std::vector<nlohmann::json> readLines(const fs::path& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "missing " << path;
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(file, line)) lines.push_back(nlohmann::json::parse(line, nullptr, false));
  return lines;
}

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sparseps_driver_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(DriverTest, SyntheticJobWritesACompleteRunDirectoryAndLearns) {
  const uint64_t seed = std::random_device{}() % 100000;
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int kSteps = 40;
  const fs::path out = dir_ / "run";
  const Result r = runLauncher(
      "--method=msgd --dataset=synthetic --model=small_resnet --world-size=3 --epochs=1 "
      "--batch-size=32 "
      "--max-steps=" + std::to_string(kSteps) + " --bandwidth=none --seed=" +
          std::to_string(seed) + " --threads=1 --out=" + out.string(),
      dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("test accuracy"));
  EXPECT_THAT(r.output, HasSubstr(out.string()));

  const nlohmann::json config = readJson(out / "config.json");
  EXPECT_EQ(config["method"], "msgd");
  EXPECT_EQ(config["world_size"], 3);
  EXPECT_EQ(config["seed"], seed);
  EXPECT_TRUE(config.contains("git_revision"));
  EXPECT_TRUE(config.contains("hostname"));

  const auto metrics = readLines(out / "metrics.jsonl");
  ASSERT_EQ(metrics.size(), 2u * kSteps);  // both workers, every step
  for (const char* key : {"time", "rank", "worker", "step", "epoch", "loss", "lr", "bytes_up",
                          "bytes_down", "staleness", "compute_s", "compress_s", "comm_s"}) {
    EXPECT_TRUE(metrics.front().contains(key)) << key;
  }
  for (const auto& line : metrics) {
    EXPECT_GT(line["bytes_up"].get<uint64_t>(), 0u);
    EXPECT_TRUE(line["worker"] == 0 || line["worker"] == 1);
  }

  const auto evals = readLines(out / "eval.jsonl");
  ASSERT_FALSE(evals.empty());
  for (const char* key : {"epoch", "time", "accuracy", "loss", "version", "bn_batches"}) {
    EXPECT_TRUE(evals.back().contains(key)) << key;
  }
  // The servers' model is evaluated with BN statistics recomputed from its own weights.
  EXPECT_EQ(config["eval_bn_batches"], 100);
  EXPECT_GT(evals.back()["bn_batches"].get<int64_t>(), 0);
  EXPECT_LE(evals.back()["bn_batches"].get<int64_t>(), 100);

  const nlohmann::json summary = readJson(out / "summary.json");
  for (const char* key :
       {"method", "model", "dataset", "world_size", "servers", "workers", "mode", "bandwidth",
        "bandwidth_bps", "latency_ns", "batch_size", "epochs", "final_accuracy", "best_accuracy",
        "wall_seconds", "train_seconds", "samples", "throughput", "bytes_up", "bytes_down",
        "updates", "mean_staleness"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
  EXPECT_EQ(summary["workers"], 2);
  EXPECT_EQ(summary["samples"], 2 * kSteps * 32);
  EXPECT_EQ(summary["updates"], 2 * kSteps);
  EXPECT_EQ(summary["final_accuracy"], evals.back()["accuracy"]);
  EXPECT_GT(summary["throughput"].get<double>(), 0);
  // 10 balanced classes: chance is 10%.
  EXPECT_GT(summary["final_accuracy"].get<double>(), 0.3) << r.output;

  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(fs::exists(out / "logs" / ("rank" + std::to_string(rank) + ".log")));
  }
  EXPECT_TRUE(fs::exists(out / "server.json"));
  EXPECT_TRUE(fs::exists(out / "worker0.json"));
  EXPECT_TRUE(fs::exists(out / "worker1.json"));
}

std::string readFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST_F(DriverTest, ResumeRestoresEachWorkersMomentumAndResiduals) {
  const fs::path out = dir_ / "run";
  const std::string flags =
      "--method=dgs --dataset=synthetic --model=small_resnet --world-size=3 --batch-size=64 "
      "--bandwidth=none --threads=1 --eval-bn-batches=2 --progress=none --out=" + out.string();
  Result r = runLauncher(flags + " --epochs=1", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(out / "checkpoint.worker0"));
  ASSERT_TRUE(fs::exists(out / "checkpoint.worker1"));

  // The servers' checkpoint lies at the start of epoch 2 (push 64): the states resume.
  // Five more steps per worker then move it inside the epoch, where they may not.
  r = runLauncher(flags + " --epochs=2 --max-steps=5 --resume", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto workerLog = [&](int rank) {
    return readFile(out / "logs" / ("rank" + std::to_string(rank) + ".log"));
  };
  for (int rank : {1, 2}) {
    EXPECT_THAT(workerLog(rank), HasSubstr("restored this worker's momentum and residuals after epoch 1"));
  }
  r = runLauncher(flags + " --epochs=2 --max-steps=5 --resume", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank : {1, 2}) {
    EXPECT_THAT(workerLog(rank), HasSubstr("after epoch 1, at server push 64, but the servers "
                                           "resume at push 74: momentum and residuals start "
                                           "from zero"));
  }

  // A damaged worker checkpoint stops the resume with what to do about it.
  std::string bytes = readFile(out / "checkpoint.worker1");
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(out / "checkpoint.worker1", std::ios::binary | std::ios::trunc) << bytes;
  r = runLauncher(flags + " --epochs=3 --resume", dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("checkpoint.worker1 is corrupt"));
  EXPECT_THAT(r.output, HasSubstr("delete it"));
}

TEST_F(DriverTest, UnknownFlagFailsWithItsName) {
  const Result r = runLauncher("--no-such-flag=1 --dataset=synthetic", dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("no-such-flag"));
  EXPECT_FALSE(fs::exists(dir_ / "runs")) << "nothing may start on a bad flag";
}

TEST_F(DriverTest, BadValuesNameTheFlagAndTheFix) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"--dataset=synthetic --density=2", {"--density", "(0, 1]"}},
      {"--dataset=synthetic --world-size=2 --servers=2",
       {"--world-size (2) must exceed --servers (2)"}},
      {"--dataset=synthetic --bandwidth=fast", {"1gbit"}},
      {"--dataset=synthetic --lr=-1", {"--lr: must be more than 0, got -1"}},
      {"--dataset=synthetic --lr=inf", {"--lr: expected a finite number, got 'inf'"}},
      {"--dataset=synthetic --eval-bn-batches=-3", {"--eval-bn-batches: must be 0 or more, got -3"}},
      {"--method=nope --dataset=synthetic", {"dgs"}},
  };
  for (const auto& [args, expected] : cases) {
    SCOPED_TRACE(args);
    const Result r = runLauncher(args, dir_);
    EXPECT_NE(r.exit_code, 0);
    for (const std::string& text : expected) EXPECT_THAT(r.output, HasSubstr(text));
  }
}

TEST_F(DriverTest, MissingDataNamesTheFetchCommand) {
  const Result r =
      runLauncher("--dataset=cifar10 --model=resnet20 --data-dir=" + (dir_ / "nothing").string(),
                  dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("fetch-data"));
}

}  // namespace
}  // namespace sparseps

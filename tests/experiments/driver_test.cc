// experiments/run and sparseps_driver end to end: a small synthetic job (1 server, 2
// workers, loopback, unshaped) must leave a complete run directory and learn, and resume
// with every worker's state; bad flags, damaged checkpoints and missing data must fail
// with a message that says what to do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/experiments/launcher.h"

namespace sparseps {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

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

TEST_F(DriverTest, ARunEndingOnAnEpochBoundaryStillEndsWithTheFinalRow) {
  // 4096 synthetic examples, 2 workers of batch 128: the last push ends epoch 1, so the
  // final model is the epoch-1 snapshot's; eval.jsonl must still say which row is final.
  // The launcher passes the user's --progress on to the first worker.
  const fs::path out = dir_ / "run";
  const Result r = runLauncher(
      "--method=msgd --dataset=synthetic --model=small_resnet --world-size=3 --epochs=1 "
      "--batch-size=128 --bandwidth=none --threads=1 --eval-samples=256 --progress=none --out=" +
          out.string(),
      dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("epoch 1/1"))) << "--progress=none was not followed";
  const auto evals = readLines(out / "eval.jsonl");
  ASSERT_GE(evals.size(), 1u);
  EXPECT_TRUE(evals.back()["final"].get<bool>());
  EXPECT_EQ(evals.back()["version"].get<uint64_t>(), 32u);
  for (size_t i = 0; i + 1 < evals.size(); ++i) EXPECT_FALSE(evals[i]["final"].get<bool>());
}

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
  for (const char* key : {"epoch", "time", "accuracy", "loss", "version", "pushes", "final",
                          "bn_batches"}) {
    EXPECT_TRUE(evals.back().contains(key)) << key;
  }
  // Server shard 0 scores the model it holds when the last worker leaves, labelled with
  // the global epoch of the pushes it applied; no worker evaluates.
  EXPECT_TRUE(evals.back()["final"].get<bool>());
  EXPECT_EQ(evals.back()["pushes"], 2 * kSteps);
  EXPECT_EQ(evals.back()["version"], 2 * kSteps);
  EXPECT_DOUBLE_EQ(evals.back()["epoch"].get<double>(),
                   2.0 * kSteps / config["pushes_per_epoch"].get<double>());
  EXPECT_EQ(config["downlink"], "dense");
  // A run capped by --max-steps is a quick one: each evaluation scores 1000 of the 1024
  // test examples, with BN statistics recomputed from as many training examples (ceil(1000 /
  // 32) batches of 32) through the servers' own weights.
  EXPECT_EQ(config["eval_samples"], 1000);
  for (const auto& row : evals) {
    EXPECT_EQ(row["examples"], 1000);
    EXPECT_EQ(row["bn_batches"], 32);
  }

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
  // The cap and the real epochs: 2 workers x 40 steps x 32 of 4096 training examples.
  EXPECT_EQ(summary["epochs"], 1);
  EXPECT_EQ(summary["max_steps"], kSteps);
  EXPECT_DOUBLE_EQ(summary["epochs_trained"].get<double>(), 2.0 * kSteps * 32 / 4096);
  // Each worker's own rate beside the job's.
  ASSERT_EQ(summary["worker_throughput"].size(), 2u);
  for (int w = 0; w < 2; ++w) {
    const nlohmann::json report = readJson(out / ("worker" + std::to_string(w) + ".json"));
    EXPECT_DOUBLE_EQ(summary["worker_throughput"][w].get<double>(),
                     report["samples"].get<double>() / report["train_seconds"].get<double>());
    EXPECT_GT(report["peak_rss_mb"].get<double>(), 0);
  }
  // 10 balanced classes: chance is 10%.
  EXPECT_GT(summary["final_accuracy"].get<double>(), 0.3) << r.output;

  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(fs::exists(out / "logs" / ("rank" + std::to_string(rank) + ".log")));
  }
  EXPECT_TRUE(fs::exists(out / "server.json"));
  EXPECT_TRUE(fs::exists(out / "worker0.json"));
  EXPECT_TRUE(fs::exists(out / "worker1.json"));
}

TEST_F(DriverTest, ResumeRestoresEachWorkersMomentumAndResiduals) {
  const fs::path out = dir_ / "run";
  const std::string flags =
      "--method=dgs --dataset=synthetic --model=small_resnet --world-size=3 --batch-size=64 "
      "--bandwidth=none --threads=1 --eval-bn-batches=2 --progress=none --out=" + out.string();
  Result r = runLauncher(flags + " --epochs=1", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // dgs replies dual-way by default, and config.json says what ran.
  const nlohmann::json config = readJson(out / "config.json");
  EXPECT_EQ(config["downlink"], "sparse");
  ASSERT_TRUE(fs::exists(out / "checkpoint.worker0"));
  ASSERT_TRUE(fs::exists(out / "checkpoint.worker1"));

  // The servers' checkpoint lies at the start of epoch 2 (push 64): the states resume.
  // Five more steps per worker then move it inside the epoch, where they may not.
  r = runLauncher(flags + " --epochs=2 --max-steps=5 --resume", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto workerLog = [&](int rank) {
    return readText(out / "logs" / ("rank" + std::to_string(rank) + ".log"));
  };
  for (int rank : {1, 2}) {
    EXPECT_THAT(workerLog(rank), HasSubstr("restored this worker's momentum and residuals after epoch 1"));
  }
  r = runLauncher(flags + " --epochs=2 --max-steps=5 --resume", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank : {1, 2}) {
    EXPECT_THAT(workerLog(rank), HasSubstr("after epoch 1, this worker's step 32, but the "
                                           "servers resume after its step 37: momentum and "
                                           "residuals start from zero"));
    // It goes on from its sixth batch of epoch 2 (index 1), not from the epoch's start.
    EXPECT_THAT(workerLog(rank), HasSubstr("starting at epoch 1 batch 5"));
    // Each attempt has a log of its own; the earlier ones are kept beside it.
    EXPECT_THAT(workerLog(rank), ::testing::Not(HasSubstr("restored this worker's momentum")));
    const std::string earlier = "rank" + std::to_string(rank);
    EXPECT_THAT(readText(out / "logs" / (earlier + ".2.log")),
                HasSubstr("restored this worker's momentum and residuals after epoch 1"));
    EXPECT_THAT(readText(out / "logs" / (earlier + ".1.log")), HasSubstr("epoch 1:"));
  }

  // Every file of the run but the launcher's logs, by name: a failed resume changes none.
  auto records = [&] {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(out)) {
      const std::string name = fs::relative(e.path(), out).string();
      if (e.is_regular_file() && name.rfind("logs/", 0) != 0) files[name] = readText(e.path());
    }
    return files;
  };

  // A damaged server checkpoint is named before any rank starts.
  const std::string server_bytes = readText(out / "checkpoint.shard0");
  std::string damaged = server_bytes;
  damaged[damaged.size() / 2] ^= 0x5a;
  std::ofstream(out / "checkpoint.shard0", std::ios::binary | std::ios::trunc) << damaged;
  auto before = records();
  r = runLauncher(flags + " --epochs=3 --resume", dir_);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("checkpoint.shard0 is corrupt"));
  EXPECT_EQ(records(), before) << "a failed resume changed the run's files";
  std::ofstream(out / "checkpoint.shard0", std::ios::binary | std::ios::trunc) << server_bytes;

  // So is a damaged worker checkpoint, with what to do about it; no worker trains on.
  std::string bytes = readText(out / "checkpoint.worker1");
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(out / "checkpoint.worker1", std::ios::binary | std::ios::trunc) << bytes;
  before = records();
  r = runLauncher(flags + " --epochs=3 --resume", dir_);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("checkpoint.worker1 is corrupt"));
  EXPECT_THAT(r.output, HasSubstr("delete it"));
  EXPECT_EQ(records(), before) << "a failed resume changed the run's files";
}

TEST_F(DriverTest, AnotherRunsDirectoryIsRefusedWithoutResumeAndLeftAsItWas) {
  const fs::path out = dir_ / "run";
  fs::create_directories(out);
  std::ofstream(out / "summary.json") << "{\"best_accuracy\": 0.5}\n";
  std::ofstream(out / "metrics.jsonl") << "{\"step\": 1}\n";
  const std::string flags =
      "--method=msgd --dataset=synthetic --model=small_resnet --world-size=3 --epochs=1 "
      "--batch-size=128 --bandwidth=none --threads=1 --progress=none --out=" + out.string();
  const Result r = runLauncher(flags, dir_);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("already holds a run (metrics.jsonl, summary.json)"));
  EXPECT_THAT(r.output, HasSubstr("--resume"));
  EXPECT_FALSE(fs::exists(out / "logs")) << "refused after a rank started";
  EXPECT_EQ(readText(out / "summary.json"), "{\"best_accuracy\": 0.5}\n");
  EXPECT_EQ(readText(out / "metrics.jsonl"), "{\"step\": 1}\n");

  // A rank started by hand refuses it too, before it meets anyone (no hang here).
  const std::string rank = std::string(SPARSEPS_DRIVER_BINARY) + " " + flags +
                           " --rank=1 --store-dir=" + (out / "store").string() + " > " +
                           (dir_ / "rank.out").string() + " 2>&1";
  EXPECT_NE(std::system(("timeout 60 " + rank).c_str()), 0);
  EXPECT_THAT(readText(dir_ / "rank.out"), HasSubstr("already holds a run"));

  // What the job itself makes before its ranks meet is no run: logs, store, slots.
  const fs::path fresh = dir_ / "fresh";
  for (const char* made : {"logs", "store", "slots"}) fs::create_directories(fresh / made);
  const std::string check = std::string(SPARSEPS_DRIVER_BINARY) +
                            " --dataset=synthetic --model=small_resnet --world-size=3 "
                            "--preflight --out=" + fresh.string() + " > /dev/null 2>&1";
  EXPECT_EQ(std::system(("timeout 60 " + check).c_str()), 0);
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
      {"--dataset=synthetic --eval-bn-batches=-3", {"--eval-bn-batches: must be -1 or more, got -3"}},
      {"--dataset=synthetic --eval-bn-batches=0 --eval-workers-bn",
       {"--eval-workers-bn", "already uses the workers' BN statistics"}},
      {"--method=nope --dataset=synthetic", {"dgs"}},
  };
  for (const auto& [args, expected] : cases) {
    SCOPED_TRACE(args);
    const Result r = runLauncher(args, dir_);
    EXPECT_NE(r.exit_code, 0);
    for (const std::string& text : expected) EXPECT_THAT(r.output, HasSubstr(text));
  }
}

// --preset=dgs-paper sets what the reference's published CIFAR-10 runs used, per method and
// worker count, for the flags not given; dgs-paper-dual the same with the dual-way reply.
TEST_F(DriverTest, PresetSetsTheReferenceRunsFlagsButNotTheGivenOnes) {
  const auto dryRun = [&](const std::string& flags) {
    const fs::path out = dir_ / "dry.json";
    const std::string command = std::string(SPARSEPS_DRIVER_BINARY) +
                                " --preflight --clock=virtual --dataset=synthetic " + flags + " > " +
                                out.string() + " 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::ifstream file(out);
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    return nlohmann::json::parse(text.substr(0, text.rfind('}') + 1), nullptr, false);
  };
  nlohmann::json c = dryRun("--preset=dgs-paper --method=dgc --world-size=33");
  ASSERT_FALSE(c.is_discarded());
  EXPECT_EQ(c["preset"], "dgs-paper");
  EXPECT_EQ(c["batch_size"], 16);  // 512 / 32 workers
  EXPECT_EQ(c["momentum"], 0.3);
  EXPECT_EQ(c["weight_decay"], 3e-4);
  EXPECT_EQ(c["weight_decay_delay"], 0);
  EXPECT_EQ(c["density"], 0.01);
  EXPECT_EQ(c["downlink"], "dense");  // the whole W - w_k
  EXPECT_EQ(c["compressed_tensors"], "all");
  EXPECT_EQ(c["epochs"], 50);
  EXPECT_EQ(c["lr_milestones"], nlohmann::json({29.0, 39.0}));
  EXPECT_EQ(c["model"], "resnet18_cifar");
  EXPECT_EQ(c["dataset"], "synthetic");  // given
  EXPECT_EQ(c["normalization"], "dataset-std");  // the reference's constants are CIFAR-10's
  EXPECT_EQ(c["init"], "torch-0.4");
  EXPECT_EQ(c["selection"], "strict");  // its dgc and gd keep |x| > the k-th largest
  EXPECT_EQ(c["start_lr"], 0.001);
  EXPECT_EQ(c["push_guard"], "refuse");  // its server applies every push as it comes
  c = dryRun("--preset=dgs-paper --method=asgd --world-size=17 --epochs=10 --batch-size=8");
  EXPECT_EQ(c["batch_size"], 8);
  EXPECT_FALSE(c.contains("momentum"));  // asgd has none: config.json records what it reads
  EXPECT_EQ(c["weight_decay"], 0.0);     // the reference's asgd steps with lr * grad
  EXPECT_EQ(c["downlink"], "dense");
  EXPECT_EQ(c["lr_milestones"], nlohmann::json({6.0, 8.0}));  // scaled to 10 epochs
  // 3 epochs scale both to 2: the second moves one epoch later.
  c = dryRun("--preset=dgs-paper --method=dgs --world-size=17 --epochs=3");
  EXPECT_EQ(c["lr_milestones"], nlohmann::json({2.0, 3.0}));
  EXPECT_EQ(c["momentum"], 0.7);  // below 32 workers
  EXPECT_EQ(c["weight_decay"], 5e-4);
  EXPECT_EQ(c["weight_decay_delay"], 900);  // the commit that wrote the 16-worker runs
  EXPECT_EQ(c["density_rule"], "fixed");
  EXPECT_EQ(c["selection"], "exact");
  EXPECT_EQ(c["downlink"], "dense");
  // The dual-way preset: the sparse reply for the methods that push sparse, not for asgd.
  for (const char* method : {"dgs", "gd", "dgc"}) {
    c = dryRun(std::string("--preset=dgs-paper-dual --world-size=17 --method=") + method);
    EXPECT_EQ(c["downlink"], "sparse") << method;
    EXPECT_EQ(c["server_density"], 0.01) << method;
  }
  c = dryRun("--preset=dgs-paper-dual --world-size=17 --method=asgd");
  EXPECT_EQ(c["downlink"], "dense");
  // Given flags win over either preset.
  c = dryRun("--preset=dgs-paper-dual --method=dgs --world-size=17 --momentum=0.5 "
             "--weight-decay-delay=0 --density-rule=lr --downlink=dense "
             "--compressed-tensors=multi-dim --push-guard=clip");
  EXPECT_EQ(c["momentum"], 0.5);
  EXPECT_EQ(c["push_guard"], "clip");
  EXPECT_EQ(c["weight_decay_delay"], 0);
  EXPECT_EQ(c["density_rule"], "lr");
  EXPECT_EQ(c["downlink"], "dense");
  EXPECT_EQ(c["compressed_tensors"], "multi-dim");
  // Without a preset dgs replies dual-way and the others dense, as defaultDownlink says.
  c = dryRun("--method=dgs");
  EXPECT_EQ(c["downlink"], "sparse");
  c = dryRun("--method=gd");
  EXPECT_EQ(c["downlink"], "dense");
}

// A dry run checks everything in one process and leaves nothing behind: no run directory,
// no store, no rank; the launcher's and the driver's alike.
TEST_F(DriverTest, DryRunChecksEverythingAndWritesNothing) {
  const std::string flags = "--dataset=synthetic --model=small_resnet --world-size=3 --threads=1";
  const Result r = runLauncher("--dry-run " + flags, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"every example of both splits read", "one forward/backward of 64",
                           "method: dgs, a push", "memory, estimated per process: worker",
                           "dry run passed"}) {
    EXPECT_THAT(r.output, HasSubstr(line));
  }
  const std::string driver = std::string(SPARSEPS_DRIVER_BINARY) + " --dry-run " + flags;
  const std::string command = "cd " + dir_.string() + " && " + driver + " > driver.out 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << readText(dir_ / "driver.out");
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    left.push_back(entry.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"driver.out", "launcher.out"}));
}

TEST_F(DriverTest, DryRunNamesABrokenFile) {
  // An IDX file cut short: Fashion-MNIST's loader reads it whole when the data set opens.
  const fs::path data = dir_ / "fmnist";
  fs::create_directories(data);
  fs::copy("/usr/share/datasets/fashion-mnist", data, fs::copy_options::recursive);
  fs::path images;
  for (const auto& entry : fs::directory_iterator(data)) {
    if (entry.path().filename().string().rfind("t10k-images", 0) == 0) images = entry.path();
  }
  if (images.empty()) GTEST_SKIP() << "no Fashion-MNIST test images installed";
  fs::resize_file(images, fs::file_size(images) / 2);
  const Result r = runLauncher("--dry-run --data-dir=" + data.string(), dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr(images.filename().string()));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("dry run passed")));
}

// The launcher takes the job from the driver's own resolution (--print-config), so the run
// directory it names without --out follows the flags as the driver reads them.
TEST_F(DriverTest, TheLauncherNamesTheRunFromTheDriversResolvedJob) {
  const Result r = runLauncher(
      "--method=gd --dataset=synthetic --model=small_resnet --world-size=4 --servers=2 "
      "--clock=virtual --bandwidth=10gbit --max-steps=2 --epochs=1 --eval-samples=0 "
      "--threads=1 --progress=none",
      dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> runs;
  for (const auto& entry : fs::directory_iterator(dir_ / "runs")) {
    runs.push_back(entry.path().filename().string());
  }
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_THAT(runs[0], ::testing::StartsWith("gd-synthetic-w2-10gbit-virtual-"));
}

TEST_F(DriverTest, PrintConfigGivesTheResolvedJobAndWhetherARankWasGiven) {
  const auto printed = [&](const std::string& env, const std::string& flags) {
    const fs::path out = dir_ / "config.json";
    const std::string command = env + " " + SPARSEPS_DRIVER_BINARY +
                                " --print-config --dataset=synthetic " + flags + " > " +
                                out.string();
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return readJson(out);
  };
  const nlohmann::json defaults = printed("", "");
  EXPECT_EQ(defaults["method"], "dgs");
  EXPECT_EQ(defaults["workers"], 4);
  EXPECT_EQ(defaults["bandwidth"], "1gbit");
  EXPECT_TRUE(defaults["rank"].is_null());
  const nlohmann::json from_env = printed("WORLD_SIZE=9 RANK=3", "--servers=2");
  EXPECT_EQ(from_env["workers"], 7);
  EXPECT_EQ(from_env["rank"], 3);
  // Across machines the default bandwidth is the real network's.
  EXPECT_EQ(printed("", "--rank=1 --master-addr=10.0.0.1")["bandwidth"], "none");
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

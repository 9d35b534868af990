// experiments/run --clock=virtual end to end: the same flags and seed give byte-identical
// records; a link-bound job in virtual time with measured step times agrees (loosely, on
// a loaded CI machine) with the same job run for real; bad time-model input is refused
// with a message that names the flag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/experiments/launcher.h"
#include "tests/temp_dir.h"

namespace sparseps {
namespace {

using ::testing::HasSubstr;

double meanStaleness(const nlohmann::json& summary) { return summary["mean_staleness"].get<double>(); }

TEST(VirtualClock, SameFlagsAndSeedGiveByteIdenticalRecords) {
  testing::TempDir dir("sparseps_virtual_");
  // Fixed step and codec times, jitter and a straggler, shaped links, dgs: every source
  // of time the model has, and the real math; only the seed fixes them.
  const std::string flags =
      "--clock=virtual --method=dgs --dataset=synthetic --model=small_resnet --world-size=5 "
      "--epochs=2 --batch-size=32 --step-time=20ms --step-jitter=0.3 --stragglers=1x2 "
      "--codec-time=1ms --bandwidth=50mbit --latency=100us --eval-bn-batches=2 --seed=9 "
      "--progress=none";
  std::vector<std::string> metrics, evals;
  for (const char* name : {"a", "b"}) {
    const fs::path out = dir.path() / name;
    const Result r = runLauncher(flags + " --out=" + out.string(), dir.path());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("simulated"));
    metrics.push_back(readText(out / "metrics.jsonl"));
    evals.push_back(readText(out / "eval.jsonl"));
    const nlohmann::json config = readJson(out / "config.json");
    EXPECT_EQ(config["clock"], "virtual");
    EXPECT_DOUBLE_EQ(config["time_model"]["step_seconds"].get<double>(), 0.020);
    EXPECT_EQ(config["time_model"]["stragglers"], 1);
    const nlohmann::json summary = readJson(out / "summary.json");
    EXPECT_EQ(summary["workers"], 4);
    EXPECT_GT(summary["peak_rss_mb"].get<double>(), 0);
    EXPECT_FALSE(summary["staleness_histogram"].empty());
  }
  ASSERT_FALSE(metrics[0].empty());
  EXPECT_EQ(metrics[0], metrics[1]);
  ASSERT_FALSE(evals[0].empty());
  EXPECT_EQ(evals[0], evals[1]);
  // Each epoch's snapshot, then the final model: the last epoch's version, scored once; the
  // final row names the epoch row that scored it instead of repeating the scores.
  const auto rows = readLines(dir.path() / "a" / "eval.jsonl");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[1]["final"].get<bool>());
  EXPECT_TRUE(rows[2]["final"].get<bool>());
  EXPECT_EQ(rows[2]["version"], rows[1]["version"]);
  EXPECT_EQ(rows[2]["same_as_epoch"], rows[1]["epoch"]);
  EXPECT_FALSE(rows[2].contains("accuracy"));
}

// --eval-workers-bn scores each snapshot with the statistics the workers pushed as well:
// those scores are the ones a run that scores only with them (--eval-bn-batches=0) writes
// for the same snapshots, and the recomputed ones are still there beside them.
TEST(VirtualClock, ScoresWithTheWorkersStatisticsMatchARunScoredOnlyWithThem) {
  testing::TempDir dir("sparseps_virtual_");
  const std::string flags =
      "--clock=virtual --method=dgs --dataset=synthetic --model=small_resnet --world-size=3 "
      "--epochs=2 --batch-size=32 --step-time=20ms --codec-time=1ms --bandwidth=50mbit "
      "--seed=9 --progress=none";
  const fs::path both = dir.path() / "both", workers = dir.path() / "workers";
  Result r = runLauncher(flags + " --eval-bn-batches=2 --eval-workers-bn --out=" + both.string(),
                         dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("with the workers' BN statistics: accuracy"));
  r = runLauncher(flags + " --eval-bn-batches=0 --out=" + workers.string(), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto scored_both = readLines(both / "eval.jsonl");
  const auto scored_workers = readLines(workers / "eval.jsonl");
  ASSERT_EQ(scored_both.size(), scored_workers.size());
  int compared = 0;
  for (size_t i = 0; i < scored_both.size(); ++i) {
    SCOPED_TRACE(scored_both[i].dump());
    ASSERT_EQ(scored_both[i]["version"], scored_workers[i]["version"]);
    if (!scored_workers[i].contains("accuracy")) continue;  // a final row naming its epoch row
    EXPECT_EQ(scored_both[i]["bn_batches"], 2);
    EXPECT_EQ(scored_both[i]["workers_bn_accuracy"], scored_workers[i]["accuracy"]);
    EXPECT_EQ(scored_both[i]["workers_bn_loss"], scored_workers[i]["loss"]);
    EXPECT_TRUE(scored_both[i].contains("accuracy"));
    EXPECT_FALSE(scored_workers[i].contains("workers_bn_accuracy"));
    ++compared;
  }
  // Both epochs, and the final model again: the workers' last statistics came after the
  // snapshot of epoch 2.
  EXPECT_EQ(compared, 3);
  EXPECT_TRUE(scored_both.back()["final"].get<bool>());
}

TEST(VirtualClock, TheMlpTrainsOnSyntheticImagesOfItsSizeWithServerThreads) {
  testing::TempDir dir("sparseps_virtual_");
  const fs::path out = dir.path() / "mlp";
  const Result r = runLauncher(
      "--clock=virtual --method=dgs --dataset=synthetic --model=mlp --world-size=3 "
      "--epochs=1 --max-steps=20 --batch-size=4 --lr=0.01 --server-threads=2 "
      "--step-time=1ms --eval-bn-batches=0 --progress=none --out=" + out.string(),
      dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json summary = readJson(out / "summary.json");
  EXPECT_EQ(summary["model"], "mlp");
  EXPECT_EQ(summary["server_threads"], 2);
  EXPECT_EQ(summary["updates"], 40);  // 2 workers x 20 steps, every push applied
  EXPECT_EQ(readJson(out / "config.json")["server_threads"], 2);
}

TEST(VirtualClock, LinkBoundJobMatchesTheRealRun) {
  testing::TempDir dir("sparseps_virtual_");
  // asgd pushes and receives the whole small_resnet (311 kB) every step: at 10 Mbit/s the
  // server's NIC, shared by both workers, decides the pace, not the cores.
  const std::string flags =
      "--method=asgd --dataset=synthetic --model=small_resnet --world-size=3 --epochs=1 "
      "--batch-size=32 --max-steps=12 --bandwidth=10mbit --eval-bn-batches=0 --threads=1 "
      "--progress=none";
  const fs::path real_out = dir.path() / "real", virtual_out = dir.path() / "virtual";
  Result r = runLauncher(flags + " --out=" + real_out.string(), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = runLauncher(flags + " --clock=virtual --out=" + virtual_out.string(), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json real = readJson(real_out / "summary.json");
  const nlohmann::json simulated = readJson(virtual_out / "summary.json");
  EXPECT_EQ(real["bytes_up"], simulated["bytes_up"]);  // the same messages, byte for byte
  const double ratio = simulated["throughput"].get<double>() / real["throughput"].get<double>();
  EXPECT_GT(ratio, 0.6) << "virtual " << simulated["throughput"] << " real " << real["throughput"];
  EXPECT_LT(ratio, 1.6) << "virtual " << simulated["throughput"] << " real " << real["throughput"];
  EXPECT_NEAR(meanStaleness(simulated), meanStaleness(real), 0.6);
}

TEST(VirtualClock, BadTimeModelInputNamesTheFlag) {
  testing::TempDir dir("sparseps_virtual_");
  const fs::path profile = dir.path() / "profile.json";
  std::ofstream(profile) << R"({"resnet20": {"64": 0.03}})";
  const std::string base = "--dataset=synthetic --model=small_resnet --world-size=4 ";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"--clock=virtual --step-time=-5ms", {"--step-time", "positive duration"}},
      {"--clock=virtual --step-time=fast", {"--step-time", "'fast'"}},
      {"--clock=virtual --step-time=profile:" + (dir.path() / "none.json").string(),
       {"cannot read", "none.json"}},
      {"--clock=virtual --step-time=profile:" + profile.string(),
       {"has no model small_resnet", "resnet20"}},
      {"--clock=virtual --stragglers=5x2", {"--stragglers", "0 <= K <= 3"}},
      {"--clock=virtual --stragglers=1x0.5", {"--stragglers", "S >= 1"}},
      {"--clock=virtual --codec-time=-1ms", {"--codec-time"}},
      {"--clock=virtual --step-jitter=-1", {"--step-jitter"}},
      {"--step-time=30ms", {"--clock=virtual"}},
  };
  for (const auto& [args, expected] : cases) {
    SCOPED_TRACE(args);
    const Result r = runLauncher(base + args, dir.path());
    EXPECT_NE(r.exit_code, 0);
    for (const std::string& text : expected) EXPECT_THAT(r.output, HasSubstr(text));
    EXPECT_FALSE(fs::exists(dir.path() / "runs")) << "nothing may start on bad input";
  }
}

}  // namespace
}  // namespace sparseps

// A run whose loss diverges says so: summary.json names the worker, its step and the loss,
// the console shows it, and --stop-on-divergence ends the run early with experiments/run's
// own exit status (4), in real and in virtual time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/experiments/launcher.h"

namespace sparseps {
namespace {

using ::testing::HasSubstr;

class DriverDivergenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sparseps_diverge_" + std::to_string(::getpid()) + "_" +
            std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

// msgd at a rate of 1000 on synthetic data: the loss explodes within a few steps.
constexpr int kMaxSteps = 60;
const std::string kDiverging =
    "--method=msgd --dataset=synthetic --model=small_resnet --epochs=1 --batch-size=32 "
    "--lr=1000 --warmup-epochs=0 --bandwidth=none --threads=1 --eval-samples=64 "
    "--progress=none --max-steps=" + std::to_string(kMaxSteps);

void expectNamed(const nlohmann::json& summary, int workers) {
  ASSERT_FALSE(summary["diverged_at_step"].is_null()) << summary.dump(2);
  EXPECT_GE(summary["diverged_at_step"].get<int>(), 1);
  EXPECT_LT(summary["diverged_at_step"].get<int>(), kMaxSteps);
  EXPECT_GE(summary["diverged_worker"].get<int>(), 0);
  EXPECT_LT(summary["diverged_worker"].get<int>(), workers);
  EXPECT_FALSE(summary["diverged_loss"].is_null());
}

TEST_F(DriverDivergenceTest, StopOnDivergenceEndsARealJobEarlyWithItsOwnStatus) {
  const fs::path out = dir_ / "run";
  const Result r = runLauncher(
      kDiverging + " --world-size=3 --stop-on-divergence --out=" + out.string(), dir_);
  ASSERT_EQ(r.exit_code, 4) << r.output;
  EXPECT_THAT(r.output, HasSubstr("diverged       worker"));
  EXPECT_THAT(r.output, HasSubstr("the run stopped there"));
  const nlohmann::json summary = readJson(out / "summary.json");
  expectNamed(summary, 2);
  EXPECT_TRUE(summary["stop_on_divergence"].get<bool>());
  EXPECT_LT(summary["updates"].get<int>(), 2 * kMaxSteps) << "the run did not stop early";
  EXPECT_TRUE(fs::exists(out / "diverged.json"));
}

TEST_F(DriverDivergenceTest, WithoutTheFlagARealJobGoesOnAndTheSummaryNamesIt) {
  const fs::path out = dir_ / "run";
  const Result r = runLauncher(kDiverging + " --world-size=2 --out=" + out.string(), dir_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("diverged       worker 0's loss at its step"));
  const nlohmann::json summary = readJson(out / "summary.json");
  expectNamed(summary, 1);
  EXPECT_FALSE(summary["stop_on_divergence"].get<bool>());
  EXPECT_THAT(readText(out / "logs" / "rank1.log"), HasSubstr("worker 0's training diverged"));
}

TEST_F(DriverDivergenceTest, StopOnDivergenceEndsAVirtualJobEarly) {
  const fs::path out = dir_ / "run";
  const Result r = runLauncher(kDiverging +
                                   " --clock=virtual --world-size=5 --step-time=10ms "
                                   "--stop-on-divergence --out=" + out.string(),
                               dir_);
  ASSERT_EQ(r.exit_code, 4) << r.output;
  EXPECT_THAT(r.output, HasSubstr("training diverged"));
  const nlohmann::json summary = readJson(out / "summary.json");
  expectNamed(summary, 4);
  EXPECT_LT(summary["updates"].get<int>(), 4 * kMaxSteps) << "the run did not stop early";
}

}  // namespace
}  // namespace sparseps

// A method of one's own reaches the driver: tests/signum_method.h writes it (signum: u = m*u
// + g, push lr * sign(u), dense) and one line adds it to the process's registry; then
// --method names it, the options it says it reads (momentum) are its flags and the
// others are refused, config.json records what it read, and the driver's virtual-time job
// trains with it (its update is checked by hand from Python: tests/python/ranks.py's
// own_method).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "experiments/driver/driver_config.h"
#include "experiments/driver/resolve_config.h"
#include "experiments/driver/virtual_role.h"
#include "optim/builtin_methods.h"
#include "tests/signum_method.h"
#include "tests/temp_dir.h"

namespace sparseps {
namespace {

using ::testing::HasSubstr;

// The one line, run once per process.
void addSignum() {
  static const bool added = methodRegistry().add(testing::makeSignum()).ok();
  ASSERT_TRUE(added);
}

absl::StatusOr<DriverConfig> resolve(const std::string& flags) {
  DriverConfig config;
  CLI::App app;
  addDriverFlags(app, &config, methodRegistry().names());
  app.parse(flags, false);
  if (absl::Status s = resolveDriverConfig(&config, givenFlags(app)); !s.ok()) return s;
  return config;
}

TEST(OwnMethodDriver, ItsFlagsAreTheOptionsItReadsAndTheOthersAreRefused) {
  addSignum();
  auto c = resolve("--preflight --method=signum --momentum=0.5 --world-size=3");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->job.method_options.momentum, 0.5);
  auto refused = resolve("--preflight --method=signum --density=0.1 --world-size=3");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("--density: --method=signum does not read it (read by dgc, dgs, gd)"));
  // Its rule reads host memory itself, so GPU workers refuse it by name.
  EXPECT_THAT(
      methodRegistry().find("signum").value()->checkDeviceRule(c->job.method_options).message(),
      HasSubstr("the worker rule of signum runs on host memory only"));
}

TEST(OwnMethodDriver, TheDriversVirtualJobTrainsWithIt) {
  addSignum();
  testing::TempDir dir("sparseps_own_method_driver_");
  const std::string out = dir.str() + "/run";
  std::filesystem::create_directories(out + "/logs");
  auto c = resolve(
      "--method=signum --momentum=0.9 --lr=0.01 --clock=virtual --dataset=synthetic "
      "--model=small_resnet --world-size=3 --batch-size=32 --max-steps=40 --epochs=1 "
      "--step-time=10ms --bandwidth=none --progress=none --eval-samples=256 --out=" +
      out);
  ASSERT_TRUE(c.ok()) << c.status();
  const absl::Status ran = runVirtualRole(*c);
  ASSERT_TRUE(ran.ok()) << ran;

  std::ifstream config_file(out + "/config.json");
  const nlohmann::json config = nlohmann::json::parse(config_file);
  EXPECT_EQ(config["method"], "signum");
  EXPECT_EQ(config["momentum"], 0.9);
  EXPECT_FALSE(config.contains("density")) << "signum does not read it";

  std::vector<double> losses;
  std::ifstream metrics(out + "/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    losses.push_back(nlohmann::json::parse(line)["loss"].get<double>());
  }
  ASSERT_EQ(losses.size(), 80u);  // 2 workers x 40 steps
  double first = 0, last = 0;
  for (size_t i = 0; i < 10; ++i) {
    first += losses[i];
    last += losses[losses.size() - 1 - i];
  }
  EXPECT_LT(last, 0.8 * first) << "the loss over the last 10 steps against the first 10";
}

}  // namespace
}  // namespace sparseps

// One job definition, two fronts: the same settings given as the driver's flags and as the
// Python front gives them (RankOptions, each keyword set by its row's name, as
// python/sparseps/job.py does) build the same JobSpec, field by field. Every job option
// the Python front takes is a driver flag and a config.json key of the same name.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/runtime/job_options.h"
#include "core/torch/rank_options.h"
#include "experiments/driver/driver_config.h"
#include "experiments/driver/resolve_config.h"
#include "optim/builtin_methods.h"
#include "optim/method_option_table.h"

namespace sparseps {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;  // name, value

constexpr double kPushesPerEpoch = 40;
constexpr int kWorldSize = 5;

MethodRegistry builtins() {
  MethodRegistry methods;
  EXPECT_TRUE(registerBuiltinMethods(methods).ok());
  return methods;
}

DriverConfig driverConfig(const Settings& settings, CLI::App& app) {
  DriverConfig config;
  addDriverFlags(app, &config, builtins().names());
  // The driver's default milestones (auto: 60% and 80% of --epochs) need an epoch count the
  // Python front does not have: both fronts get them given, or none.
  std::string flags = "--preflight --world-size=" + std::to_string(kWorldSize);
  bool milestones = false;
  for (const auto& [name, value] : settings) {
    flags += " --" + absl::StrReplaceAll(name, {{"_", "-"}}) + "=" + value;
    milestones = milestones || name == "lr_milestones";
  }
  if (!milestones) flags += " --lr-milestones=none";
  app.parse(flags, false);
  return config;
}

JobSpec fromDriver(const Settings& settings) {
  CLI::App app;
  DriverConfig config = driverConfig(settings, app);
  EXPECT_TRUE(resolveDriverConfig(&config, givenFlags(app)).ok());
  return makeJobSpec(config, kPushesPerEpoch).value();
}

// Sets a field by its row's name, from text, as a keyword sets it.
template <typename T>
void setText(T& field, const std::string& text) {
  if constexpr (std::is_same_v<T, std::string>) {
    field = text;
  } else if constexpr (std::is_same_v<T, bool>) {
    field = text == "on" || text == "true";
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    field.clear();
    for (absl::string_view part : absl::StrSplit(text, ',')) {
      double v = 0;
      ASSERT_TRUE(absl::SimpleAtod(part, &v)) << text;
      field.push_back(v);
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    ASSERT_TRUE(absl::SimpleAtod(text, &field)) << text;
  } else {
    ASSERT_TRUE(absl::SimpleAtoi(text, &field)) << text;
  }
}

JobSpec fromRankOptions(const Settings& settings) {
  RankOptions options;
  options.rank = 1;
  options.world_size = kWorldSize;
  options.job.pushes_per_epoch = kPushesPerEpoch;
  for (const auto& [name, value] : settings) {
    bool found = false;
    for (const JobOptionRow& row : jobOptionRows()) {
      if (row.name != name) continue;
      std::visit([&, &value = value](const auto& f) { setText(options.job.*(f.member), value); },
                 row.ref);
      found = true;
    }
    if (const MethodOptionRow* row = findMethodOption(name)) {
      std::visit(Overloaded{[&](const ChoiceRef& f) {
                              EXPECT_TRUE(f.set(options.job.method_options, value).ok());
                            },
                            [&](const auto& f) {
                              setText(f.of(options.job.method_options), value);
                            }},
                 row->ref);
      found = true;
    }
    EXPECT_TRUE(found) << name << " is neither a job nor a method option";
  }
  return options.jobSpec(builtins()).value();
}

// Every field a rank reads, in words, so a difference names itself.
std::map<std::string, std::string> fields(const JobSpec& job) {
  std::map<std::string, std::string> f;
  f["num_servers"] = std::to_string(job.num_servers);
  f["num_workers"] = std::to_string(job.num_workers);
  f["method"] = job.method;
  f["mode"] = nameOf(kConsistencyModeNames, job.server.mode);
  f["staleness"] = std::to_string(job.server.staleness);
  f["lr0"] = std::to_string(job.server.lr.lr0);
  f["milestones"] = absl::StrJoin(job.server.lr.milestones, ",");
  f["gamma"] = std::to_string(job.server.lr.gamma);
  f["warmup_epochs"] = std::to_string(job.server.lr.warmup_epochs);
  f["pushes_per_epoch"] = std::to_string(job.server.pushes_per_epoch);
  f["allow_f16"] = std::to_string(job.encode.allow_f16);
  f["forced_encoding"] = std::to_string(job.encode.forced.has_value());
  f["peer_timeout_ms"] = std::to_string(job.peer_timeout.count());
  const MethodOptions& o = job.method_options;
  f["options.lr0"] = std::to_string(o.lr0);
  f["options.seed"] = std::to_string(o.seed);
  for (const MethodOptionRow& row : methodOptionRows()) {
    f["options." + row.name] = std::visit(
        Overloaded{[&](const ChoiceRef& c) { return c.get(o); },
                   [&](const FieldRef<std::string>& c) { return c.get(o); },
                   [&](const FieldRef<std::vector<double>>& c) {
                     return absl::StrJoin(c.get(o), ",");
                   },
                   [&](const auto& c) { return std::to_string(c.get(o)); }},
        row.ref);
  }
  return f;
}

TEST(JobFrontsTest, TheDriverAndThePythonFrontBuildTheSameJob) {
  const std::vector<Settings> cases = {
      {{"method", "dgs"}},
      {{"method", "gd"}},
      {{"method", "dgc"}, {"density", "0.05"}},  // server_density stays its default in both
      {{"method", "gd"}, {"f16", "on"}, {"compressor", "qsgd:levels=4"}},
      {{"method", "dgs"}, {"mode", "staleness"}, {"staleness", "2"}, {"lr", "0.05"},
       {"lr_milestones", "2,4"}, {"lr_gamma", "0.5"}, {"warmup_epochs", "1"}, {"seed", "3"},
       {"peer_timeout", "12"}, {"momentum", "0.7"}, {"density", "0.02"},
       {"density_rule", "fixed"}, {"downlink", "dense"}, {"resync_every", "9"}},
      {{"method", "dgc"}, {"mode", "sync"}, {"downlink", "sparse"}, {"server_density", "0.2"},
       {"selection", "sampled"}, {"nesterov", "on"}, {"dgc_warmup", "on"}},
  };
  for (const Settings& settings : cases) {
    std::string named;
    for (const auto& [name, value] : settings) named += name + "=" + value + " ";
    SCOPED_TRACE(named);
    const auto driver = fields(fromDriver(settings));
    const auto python = fields(fromRankOptions(settings));
    for (const auto& [field, value] : driver) EXPECT_EQ(python.at(field), value) << field;
  }
}

TEST(JobFrontsTest, TheDivergencesThatWereAreGone) {
  // f16 values travel only if the wire may carry them: from both fronts.
  const JobSpec f16 = fromRankOptions({{"method", "gd"}, {"f16", "on"}});
  EXPECT_TRUE(f16.encode.allow_f16);
  EXPECT_FALSE(fromRankOptions({{"method", "gd"}}).encode.allow_f16);
  // The reply density is its own option: a worker density does not move it.
  EXPECT_EQ(fromRankOptions({{"method", "dgs"}, {"density", "0.05"}}).method_options.server_density,
            MethodOptions().server_density);
  // The downlink is the method's own unless given, resolved by the method alone.
  const MethodRegistry methods = builtins();
  for (const std::string& method : methods.names()) {
    const JobSpec job = fromRankOptions({{"method", method}});
    EXPECT_EQ(job.method_options.downlink, Downlink::kAuto) << method;
    EXPECT_EQ(methods.find(method).value()->downlink(job.method_options),
              method == "dgs" ? Downlink::kSparse : Downlink::kDense)
        << method;
  }
}

TEST(JobFrontsTest, EveryJobOptionIsADriverFlagAndAConfigKeyOfTheSameName) {
  CLI::App app;
  DriverConfig config = driverConfig({}, app);
  ASSERT_TRUE(resolveDriverConfig(&config, givenFlags(app)).ok());
  const nlohmann::json json = config.toJson();
  for (const JobOptionRow& row : jobOptionRows()) {
    if (row.name == "pushes_per_epoch") continue;  // the driver counts it from the data
    EXPECT_NO_THROW(app.get_option(row.flag())) << row.flag();
    EXPECT_TRUE(json.contains(row.name)) << row.name;
  }
}

}  // namespace
}  // namespace sparseps

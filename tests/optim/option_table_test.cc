// The method option table: each row reaches its own field of MethodOptions, and the
// methods a row says do not read an option really ignore it (so the driver may refuse it),
// while the methods it names really change what they push.

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "optim/builtin_methods.h"
#include "optim/method_option_table.h"
#include "optim/method_registry.h"
#include "tests/optim/reference.h"

namespace sparseps::test {
namespace {

using Reader = std::function<std::string(const MethodOptions&)>;

// Every user-set field of MethodOptions, read directly, as text.
const std::map<std::string, Reader>& fields() {
  static const auto* f = new std::map<std::string, Reader>{
      {"momentum", [](const MethodOptions& o) { return absl::StrCat(o.momentum); }},
      {"weight_decay", [](const MethodOptions& o) { return absl::StrCat(o.weight_decay); }},
      {"weight_decay_delay",
       [](const MethodOptions& o) { return absl::StrCat(o.weight_decay_delay); }},
      {"density", [](const MethodOptions& o) { return absl::StrCat(o.density); }},
      {"density_rule",
       [](const MethodOptions& o) { return absl::StrCat(o.density_rule == DensityRule::kFixed); }},
      {"server_density", [](const MethodOptions& o) { return absl::StrCat(o.server_density); }},
      {"downlink",
       [](const MethodOptions& o) { return absl::StrCat(static_cast<int>(o.downlink)); }},
      {"selection",
       [](const MethodOptions& o) { return absl::StrCat(o.selection == Selection::kSampled); }},
      {"resync_every", [](const MethodOptions& o) { return absl::StrCat(o.resync_every); }},
      {"f16", [](const MethodOptions& o) { return absl::StrCat(o.f16); }},
      {"compressor", [](const MethodOptions& o) { return o.gd.compressor; }},
      {"error_feedback", [](const MethodOptions& o) { return absl::StrCat(o.gd.error_feedback); }},
      {"nesterov", [](const MethodOptions& o) { return absl::StrCat(o.dgc.nesterov); }},
      {"clip_norm", [](const MethodOptions& o) { return absl::StrCat(o.dgc.clip_norm); }},
      {"dgc_warmup", [](const MethodOptions& o) { return absl::StrCat(o.dgc.warmup); }},
      {"dgc_warmup_densities",
       [](const MethodOptions& o) { return absl::StrJoin(o.dgc.warmup_densities, ","); }},
  };
  return *f;
}

// A valid value other than the default, set through the row.
void setOther(const MethodOptionRow& row, MethodOptions* o) {
  std::visit(Overloaded{
                 [o](const FieldRef<bool>& f) { f.of(*o) = !f.get(*o); },
                 [o](const FieldRef<int>& f) { f.of(*o) += 3; },
                 [o](const FieldRef<double>& f) {
                   f.of(*o) = f.get(*o) > 0 ? f.get(*o) * 0.5 : 0.05;
                 },
                 [o](const FieldRef<std::string>& f) { f.of(*o) = "signsgd"; },
                 [o](const FieldRef<std::vector<double>>& f) { f.of(*o) = {0.5, 0.3}; },
                 [o](const ChoiceRef& f) {
                   for (const std::string& name : f.names) {
                     if (name != f.get(*o)) {
                       ASSERT_TRUE(f.set(*o, name).ok());
                       break;
                     }
                   }
                 },
             },
             row.ref);
}

TEST(MethodOptionTable, EachRowReachesItsOwnFieldAndEveryFieldHasARow) {
  std::set<std::string> names;
  for (const MethodOptionRow& row : methodOptionRows()) {
    SCOPED_TRACE(row.name);
    names.insert(row.name);
    ASSERT_EQ(fields().count(row.name), 1u);
    const MethodOptions before;
    MethodOptions after;
    setOther(row, &after);
    for (const auto& [name, read] : fields()) {
      if (name == row.name) {
        EXPECT_NE(read(after), read(before)) << name;
      } else {
        EXPECT_EQ(read(after), read(before)) << name;
      }
    }
    EXPECT_EQ(findMethodOption(row.name), &row);
    EXPECT_EQ(row.flag(), "--" + absl::StrJoin(absl::StrSplit(row.name, '_'), "-"));
  }
  EXPECT_EQ(names.size(), fields().size());
  EXPECT_EQ(findMethodOption("lr0"), nullptr);  // the job sets it
}

TEST(MethodOptionTable, ValidateNamesTheRowsField) {
  MethodOptions o;
  o.density = 2;
  EXPECT_NE(o.validate().message().find(findMethodOption("density")->field + ":"),
            std::string::npos);
  o = MethodOptions();
  o.dgc.clip_norm = -1;
  EXPECT_NE(o.validate().message().find(findMethodOption("clip_norm")->field + ":"),
            std::string::npos);
  o = MethodOptions();
  o.gd.compressor = "nope";
  EXPECT_NE(o.validate().message().find(findMethodOption("compressor")->field + ":"),
            std::string::npos);
}

// What a server holds after `steps` pushes of one worker with options `o` (dense downlink:
// the worker then holds the same), for fixed gradients.
std::vector<float> modelAfterPushes(const std::string& method_name, MethodOptions o) {
  MethodRegistry registry;
  EXPECT_TRUE(registerBuiltinMethods(registry).ok());
  const Method* method = *registry.find(method_name);
  o.setNumWorkers(1).setSeed(7);
  const CheckedOptions checked = method->check(o).value();
  SegmentSpecs specs;
  specs.push_back(SegmentSpec{0, 0, 4000, true});
  specs.push_back(SegmentSpec{1, 4000, 30, false});
  const size_t n = 4030;
  std::unique_ptr<WorkerRule> worker = method->makeWorker(specs, checked);
  std::unique_ptr<ServerRule> server = method->makeServer(specs, checked);
  std::mt19937_64 rng(11);
  std::vector<float> W = randomVector(rng, n);
  std::vector<float> w = W;
  for (int t = 0; t < 4; ++t) {
    const std::vector<float> grad = randomVector(rng, n, t == 0 ? 5.0f : 1.0f);
    StepContext ctx;
    ctx.lr = 0.1f;
    ctx.epoch = 0;
    ctx.step = static_cast<uint64_t>(t);
    Message push, reply;
    worker->makePush(grad, w, ctx, &push);
    server->applyPush(0, push, 1.0f, absl::MakeSpan(W));
    server->makeReply(0, W, &reply);
    worker->applyReply(reply, absl::MakeSpan(w));
  }
  return W;
}

TEST(MethodOptionTable, ReadersChangeWhatTheyPushAndTheOthersIgnoreTheOption) {
  for (const std::string method : {"asgd", "msgd", "gd", "dgc", "dgs"}) {
    for (const MethodOptionRow& row : methodOptionRows()) {
      if (row.every_method) continue;  // every method reads it
      SCOPED_TRACE(method + " " + row.name);
      MethodOptions base;
      // The schedule is read only while the warm-up is on.
      if (row.name == "dgc_warmup_densities") base.dgc.warmup = true;
      // The density rule matters once the rate is below lr0 (the pushes run at 0.1).
      if (row.name == "density_rule") base.lr0 = 0.2;
      MethodOptions other = base;
      setOther(row, &other);
      const bool same = modelAfterPushes(method, base) == modelAfterPushes(method, other);
      EXPECT_EQ(same, !row.readBy(method));
    }
  }
}

}  // namespace
}  // namespace sparseps::test

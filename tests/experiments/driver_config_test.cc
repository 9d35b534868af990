// The driver's flag resolution: per-model defaults (ResNet-50's learning rate follows the
// linear scaling rule with a warm-up), Imagenette's crop size, and the bounds of a quick
// run's evaluation. Parsed and resolved as sparseps_driver does, without starting a rank.
#include <CLI/CLI.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "absl/status/statusor.h"
#include <torch/cuda.h>
#include "core/runtime/job.h"
#include "experiments/driver/driver_config.h"
#include "experiments/driver/rank_setup.h"
#include "experiments/driver/resolve_config.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

using ::testing::HasSubstr;

// Resolved as the launcher's --preflight does, or (preflight false) as a rank does.
absl::StatusOr<DriverConfig> resolve(const std::string& flags, bool preflight = true) {
  MethodRegistry methods;
  EXPECT_TRUE(registerBuiltinMethods(methods).ok());
  DriverConfig config;
  CLI::App app;
  addDriverFlags(app, &config, methods.names());
  app.parse((preflight ? "--preflight " : "") + flags, false);
  if (absl::Status s = resolveDriverConfig(&config, givenFlags(app)); !s.ok()) return s;
  return config;
}

TEST(DriverConfigTest, ResNet50LearningRateScalesWithTheUpdatesBatchAndWarmsUp) {
  // Async: each server update is one worker's push of 16 examples: 0.1 x 16 / 256.
  auto c = resolve("--model=resnet50 --dataset=imagenette --world-size=5 --batch-size=16 "
                   "--epochs=10");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->job.lr, 0.00625);
  EXPECT_DOUBLE_EQ(c->job.warmup_epochs, 2.0);  // a fifth of the run
  // Sync: an update averages a round of 8 pushes of 64, 512 examples.
  c = resolve("--model=resnet50 --dataset=imagenette --world-size=9 --batch-size=64 --epochs=90 "
              "--mode=sync");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->job.lr, 0.2);
  EXPECT_DOUBLE_EQ(c->job.warmup_epochs, 5.0);  // at most 5 epochs
  // Given flags win; other models keep the fixed default.
  c = resolve("--model=resnet50 --dataset=imagenette --lr=0.3 --warmup-epochs=0");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->job.lr, 0.3);
  EXPECT_DOUBLE_EQ(c->job.warmup_epochs, 0.0);
  c = resolve("--model=resnet20 --dataset=cifar10 --batch-size=16");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->job.lr, 0.1);
  EXPECT_DOUBLE_EQ(c->job.warmup_epochs, 0.0);
}

// --synthetic-classes sizes the synthetic data set's classes (1000: an ImageNet model's
// head) and is refused for a data set with classes of its own.
TEST(DriverConfigTest, SyntheticClassesApplyToTheSyntheticDataSetOnly) {
  auto c = resolve("--dataset=synthetic --model=resnet18 --synthetic-classes=1000");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->synthetic_classes, 1000);
  EXPECT_EQ(c->toJson()["synthetic_classes"], 1000);
  c = resolve("--dataset=cifar10 --synthetic-classes=1000");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("--synthetic-classes applies to --dataset=synthetic"));
  c = resolve("--dataset=cifar10 --synthetic-size=100");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("--synthetic-size applies to --dataset=synthetic"));
  c = resolve("--dataset=cifar10");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->toJson().contains("synthetic_classes"));
}

TEST(DriverConfigTest, EachRankSeedsItsMethodWithSeedPlusItsRank) {
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  SegmentSpec spec;
  spec.numel = 1000;
  spec.compressed = true;
  for (int rank : {0, 1, 3}) {
    auto c = resolve("--world-size=5 --seed=7 --rank=" + std::to_string(rank));
    ASSERT_TRUE(c.ok()) << c.status();
    const JobSpec job = makeJobSpec(*c, 1).value();
    auto resolved = resolveJob(job, methods, {spec});
    ASSERT_TRUE(resolved.ok()) << resolved.status();
    EXPECT_EQ(resolved->forRank(rank)->seed, 7u + static_cast<uint64_t>(rank)) << "rank " << rank;
  }
}

TEST(DriverConfigTest, ACompressorIsGdsAndReachesTheJobAndConfig) {
  auto c = resolve("--world-size=5 --method=gd --compressor=qsgd:levels=4 --error-feedback=off");
  ASSERT_TRUE(c.ok()) << c.status();
  const JobSpec job = makeJobSpec(*c, 1).value();
  EXPECT_EQ(job.method_options.gd.compressor, "qsgd:levels=4");
  EXPECT_FALSE(job.method_options.gd.error_feedback);
  EXPECT_EQ(c->toJson()["compressor"], "qsgd:levels=4");
  EXPECT_EQ(c->toJson()["error_feedback"], false);
  // What dgs really selects with, and nothing for a dense method.
  c = resolve("--world-size=5 --method=dgs --selection=sampled");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->toJson()["compressor"], "sampled");
  c = resolve("--world-size=5 --method=asgd");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->toJson()["compressor"], "none");

  // A bad compressor or option is named with its flag.
  for (const char* spec : {"qsgd:levels=0", "nope"}) {
    c = resolve(std::string("--world-size=5 --method=gd --compressor=") + spec);
    ASSERT_FALSE(c.ok()) << spec;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("--compressor: ")) << spec;
  }
}

// Every method option is a flag made from the option table, and reaches the job.
TEST(DriverConfigTest, MethodOptionFlagsReachTheJob) {
  auto c = resolve(
      "--world-size=5 --method=dgc --momentum=0.5 --weight-decay=0.001 --density=0.05 "
      "--server-density=0.2 --downlink=sparse --selection=sampled --resync-every=9 --f16 "
      "--nesterov --clip-norm=2 --dgc-warmup --dgc-warmup-densities=0.5,0.2");
  ASSERT_TRUE(c.ok()) << c.status();
  const MethodOptions o = makeJobSpec(*c, 1).value().method_options;
  EXPECT_EQ(o.momentum, 0.5);
  EXPECT_EQ(o.weight_decay, 0.001);
  EXPECT_EQ(o.density, 0.05);
  EXPECT_EQ(o.server_density, 0.2);
  EXPECT_EQ(o.downlink, Downlink::kSparse);
  EXPECT_EQ(o.selection, Selection::kSampled);
  EXPECT_EQ(o.resync_every, 9);
  EXPECT_TRUE(o.f16);
  EXPECT_TRUE(o.dgc.nesterov);
  EXPECT_EQ(o.dgc.clip_norm, 2.0);
  EXPECT_TRUE(o.dgc.warmup);
  EXPECT_EQ(o.dgc.warmup_densities, (std::vector<double>{0.5, 0.2}));
  const nlohmann::json json = c->toJson();
  EXPECT_EQ(json["momentum"], 0.5);
  EXPECT_EQ(json["selection"], "sampled");
  EXPECT_EQ(json["nesterov"], true);
  EXPECT_EQ(json["dgc_warmup_densities"], nlohmann::json({0.5, 0.2}));
}

TEST(DriverConfigTest, AnOptionTheMethodDoesNotReadIsRefusedOrIgnoredWhenAsked) {
  auto c = resolve("--world-size=5 --method=asgd --momentum=0.5");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("--momentum: --method=asgd does not read it (read by dgc, dgs, msgd)"));
  c = resolve("--world-size=5 --method=dgs --compressor=qsgd");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("(read by gd)"));
  c = resolve("--world-size=5 --method=gd --nesterov");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--nesterov"));

  // A sweep gives one set of flags to several methods: each ignores what it does not
  // read, and config.json records only what it read.
  c = resolve("--world-size=5 --method=asgd --momentum=0.5 --nesterov --ignore-unread-options");
  ASSERT_TRUE(c.ok()) << c.status();
  const nlohmann::json json = c->toJson();
  EXPECT_FALSE(json.contains("momentum"));
  EXPECT_FALSE(json.contains("nesterov"));
  EXPECT_FALSE(json.contains("density"));
  EXPECT_TRUE(json.contains("weight_decay"));
}

TEST(DriverConfigTest, AnOutOfRangeMethodOptionIsNamedByItsFlag) {
  for (const auto& [flags, want] : std::vector<std::pair<std::string, std::string>>{
           {"--density=2", "--density: must be in (0, 1], got 2"},
           {"--momentum=1", "--momentum: must be in [0, 1), got 1"},
           {"--resync-every=0", "--resync-every: must be >= 1"},
           {"--method=dgc --dgc-warmup --dgc-warmup-densities=0.5,3",
            "--dgc-warmup-densities[1]: must be in (0, 1], got 3"},
       }) {
    auto c = resolve("--world-size=5 " + flags);
    ASSERT_FALSE(c.ok()) << flags;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(want)) << flags;
  }
  EXPECT_THROW(resolve("--world-size=5 --downlink=both"), CLI::ValidationError);
}

TEST(DriverConfigTest, ImageSizeIsImagenettesOrSyntheticsAndDefaultsToTheModels) {
  auto c = resolve("--model=resnet50 --dataset=imagenette");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->image_size, 224);
  c = resolve("--model=resnet50 --dataset=imagenette --image-size=128");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->image_size, 128);
  EXPECT_EQ(c->toJson()["image_size"], 128);
  c = resolve("--model=resnet20 --dataset=cifar10 --image-size=64");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("--image-size applies to imagenette and synthetic"));
  c = resolve("--model=resnet20 --dataset=synthetic --image-size=48 --synthetic-size=40");
  ASSERT_TRUE(c.ok()) << c.status();
  auto data = loadDataset(*c);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->imageShape(), (std::vector<int64_t>{3, 48, 48}));
  EXPECT_EQ((*data)->size(Split::kTrain), 40);
  EXPECT_EQ((*data)->size(Split::kTest), 10);
  c = resolve("--model=resnet50 --dataset=imagenette --image-size=16");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("at least 32"));
}

TEST(DriverConfigTest, AQuickRunsEvaluationIsBounded) {
  auto c = resolve("--dataset=synthetic --batch-size=64");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eval_samples, 0);  // the whole test split
  EXPECT_EQ(c->evalBnBatches(10000), 100);
  c = resolve("--dataset=synthetic --batch-size=64 --max-steps=5");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eval_samples, 1000);
  EXPECT_EQ(c->evalBnBatches(1000), 16);  // ceil(1000 / 64) batches: as many examples
  c = resolve("--dataset=synthetic --max-steps=5 --eval-samples=0 --eval-bn-batches=7");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eval_samples, 0);
  EXPECT_EQ(c->evalBnBatches(1000), 7);
}

TEST(DriverConfigTest, ADryRunNeedsNoRankStoreOrRunDirectory) {
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  for (const char* mode : {"--dry-run", "--preflight"}) {
    DriverConfig config;
    CLI::App app;
    addDriverFlags(app, &config, methods.names());
    app.parse(std::string(mode) + " --world-size=3", false);
    EXPECT_TRUE(resolveDriverConfig(&config, givenFlags(app)).ok()) << mode;
    EXPECT_FALSE(config.isServer()) << "a dry run takes a worker's view";
  }
  DriverConfig config;
  CLI::App app;
  addDriverFlags(app, &config, methods.names());
  app.parse("--world-size=3", false);
  EXPECT_THAT(resolveDriverConfig(&config, givenFlags(app)).message(), HasSubstr("--rank"));
}

// --device=cuda is checked with the flags: on a machine without a GPU LibTorch sees (or a
// build without the CUDA kernels) it fails before any rank starts, saying what to do.
TEST(DriverConfigTest, DeviceCudaWithoutAGpuSaysWhatToDo) {
  auto c = resolve("--device=cpu");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->device, "cpu");
  EXPECT_EQ(c->toJson()["device"], "cpu");
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is present: nothing to refuse";
  c = resolve("--device=cuda");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("--device=cuda"));
  EXPECT_THAT(c.status().message(), HasSubstr("--device=cpu"));
  c = resolve("--device=cuda --clock=virtual");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("--clock=virtual"));
  DriverConfig config;
  CLI::App app;
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  addDriverFlags(app, &config, methods.names());
  EXPECT_THROW(app.parse("--device=tpu", false), CLI::ValidationError);
}

TEST(DriverConfigTest, OnNetnsHostsTheKernelShapesTheLinksAndTheSummaryNamesTheNetwork) {
  // A rank of a --net=netns job keeps its bandwidth (tc shapes to it) across hosts, where a
  // multi-machine job is refused one; the Channel shapes nothing.
  auto c = resolve("--world-size=3 --rank=1 --net=netns --master-addr=10.200.0.1 --iface=eth0 "
                   "--bandwidth=1gbit --out=o", false);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->bandwidth_bps, 1e9);
  EXPECT_FALSE(c->channelShapes());
  EXPECT_EQ(c->network(), "netns");
  // The hosts share this machine: its cores are divided among the 2 workers, as on loopback.
  EXPECT_FALSE(c->multiMachine());
  EXPECT_EQ(threadsFor(*c), std::max(1, machineCores() / 2));
  EXPECT_FALSE(resolve("--world-size=3 --rank=1 --master-addr=10.0.0.1 --bandwidth=1gbit "
                       "--out=o", false).ok());
  c = resolve("--world-size=3 --rank=1 --bandwidth=1gbit --store-dir=s --out=o", false);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->channelShapes());
  EXPECT_EQ(c->network(), "loopback");
  // The hosts and their addresses come from experiments/run; no rank runs without them, and
  // a virtual-time job runs none.
  c = resolve("--world-size=3 --rank=1 --net=netns --store-dir=s --out=o", false);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("experiments/run --net=netns"));
  c = resolve("--world-size=3 --net=netns --clock=virtual --out=o");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("drop one of them"));
}

TEST(DriverConfigTest, InitAndNormalizationAreCheckedAgainstTheModelAndDataSet) {
  auto c = resolve("--dataset=cifar10 --model=resnet18_cifar --init=torch-0.4 "
                   "--normalization=per-image-std");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->modelInit(), ModelInit::kTorch04);
  EXPECT_EQ(c->inputNormalization(), Normalization::kPerImageStd);
  EXPECT_EQ(c->toJson()["init"], "torch-0.4");
  EXPECT_EQ(c->toJson()["normalization"], "per-image-std");
  c = resolve("--dataset=fashion-mnist --normalization=per-image-std");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("--normalization=per-image-std is defined for cifar10 only"));
  c = resolve("--dataset=fashion-mnist --model=mlp --init=kaiming-fan-out");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("the mlp has neither"));
}

TEST(DriverConfigTest, TheStartUpReachesTheJob) {
  auto c = resolve("--start-gap=0.5 --start-lr=0.001");
  ASSERT_TRUE(c.ok()) << c.status();
  c->job.pushes_per_epoch = 100;  // counted from the data by a rank
  auto job = c->job.jobSpec(c->servers, c->numWorkers());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_DOUBLE_EQ(job->startSeconds(3), 1.5);
  EXPECT_DOUBLE_EQ(job->start_lr, 0.001);
  c = resolve("--start-gap=0.5 --mode=sync");
  if (c.ok()) c->job.pushes_per_epoch = 100;
  const absl::Status refused =
      c.ok() ? c->job.jobSpec(c->servers, c->numWorkers()).status() : c.status();
  EXPECT_THAT(std::string(refused.message()), HasSubstr("start_gap needs mode async"));
}

}  // namespace
}  // namespace sparseps

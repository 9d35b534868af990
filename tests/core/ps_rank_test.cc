// The one-call API (core/torch/ps_rank.h) over real Gloo on loopback: a server shard and a worker,
// each started from a module and a RankOptions, in two threads of this process.
#include "core/torch/ps_rank.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <utility>

namespace sparseps {
namespace {

torch::nn::Sequential makeNet(uint64_t seed) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(6, 8), torch::nn::BatchNorm1d(8),
                               torch::nn::ReLU(), torch::nn::Linear(8, 3));
}

class PsRankTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sparseps_ps_rank_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RankOptions options(int rank) const {
    RankOptions o;
    o.rank = rank;
    o.world_size = 2;
    o.store_dir = dir_.string();
    o.connect_timeout_s = 20;
    o.job.method = "asgd";
    o.job.lr = 0.05;
    o.job.method_options.setMomentum(0).setWeightDecay(1e-3);
    return o;
  }
  std::filesystem::path dir_;
};

TEST_F(PsRankTest, AWorkerStartsFromTheServersModelAndStepsAsTorchSgd) {
  constexpr int kSteps = 6;
  torch::manual_seed(11);
  auto inputs = torch::randn({kSteps, 16, 6});
  auto targets = torch::randint(0, 3, {kSteps, 16});

  auto served = makeNet(3);
  auto reference = makeNet(3);  // the server's initial model, trained by torch's SGD
  torch::optim::SGD sgd(reference->parameters(),
                        torch::optim::SGDOptions(0.05).weight_decay(1e-3));
  for (int s = 0; s < kSteps; ++s) {
    sgd.zero_grad();
    torch::cross_entropy_loss(reference->forward(inputs[s]), targets[s]).backward();
    sgd.step();
  }

  std::thread server([&] {
    auto stats = serveShard(options(0), served.ptr());
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_TRUE(stats->dropped.empty());
  });
  auto net = makeNet(5);  // its own weights until the server's arrive
  auto worker = PsWorker::connect(options(1), net.ptr());
  ASSERT_TRUE(worker.ok()) << worker.status();
  for (int s = 0; s < kSteps; ++s) {
    (*worker)->zeroGrad();
    torch::cross_entropy_loss(net->forward(inputs[s]), targets[s]).backward();
    ASSERT_TRUE((*worker)->step().ok());
  }
  EXPECT_FLOAT_EQ((*worker)->lr(), 0.05f);
  ASSERT_TRUE((*worker)->finish().ok());
  EXPECT_EQ((*worker)->step().code(), absl::StatusCode::kFailedPrecondition);
  server.join();

  auto got = net->parameters();
  auto want = reference->parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-6, 1e-7)) << "parameter " << i;
  }
}

TEST_F(PsRankTest, RolesAndOptionsAreCheckedBeforeAnythingConnects) {
  auto net = makeNet(1);
  const void* before = net->parameters()[0].data_ptr();
  RankOptions bad = options(1);
  bad.job.method = "nope";
  auto worker = PsWorker::connect(bad, net.ptr());
  EXPECT_EQ(worker.status().code(), absl::StatusCode::kNotFound) << worker.status();
  EXPECT_EQ(net->parameters()[0].data_ptr(), before);  // nothing re-pointed

  EXPECT_EQ(PsWorker::connect(options(0), net.ptr()).status().code(),
            absl::StatusCode::kInvalidArgument);  // rank 0 serves
  EXPECT_EQ(serveShard(options(1), net.ptr()).status().code(),
            absl::StatusCode::kInvalidArgument);  // rank 1 trains
  RankOptions schedule = options(1);
  schedule.job.lr_milestones = {2};  // epochs, with no epoch length to count them
  EXPECT_EQ(PsWorker::connect(schedule, net.ptr()).status().code(),
            absl::StatusCode::kInvalidArgument);
  RankOptions spelled = options(1);
  spelled.job.mode = "eventual";
  const absl::Status status = PsWorker::connect(spelled, net.ptr()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("mode: 'eventual'"), std::string::npos) << status;
}

}  // namespace
}  // namespace sparseps

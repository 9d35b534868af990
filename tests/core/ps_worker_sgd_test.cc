// PsWorker as a LibTorch optimizer against torch::optim::SGD: with asgd, one worker and
// one server, every step through the parameter server must move the module exactly as SGD
// would.
#include "core/torch/ps_rank.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "core/runtime/job.h"
#include "tests/core/local_hub.h"
#include "optim/builtin_methods.h"

namespace sparseps {
namespace {

torch::nn::Sequential makeNet() {
  torch::manual_seed(3);
  return torch::nn::Sequential(torch::nn::Linear(6, 8), torch::nn::BatchNorm1d(8),
                               torch::nn::ReLU(), torch::nn::Linear(8, 3));
}

TEST(PsWorkerSgdTest, AsgdWithOneWorkerMatchesTorchSgd) {
  constexpr double kLr = 0.05, kWd = 1e-3;
  constexpr int kSteps = 8;
  torch::manual_seed(11);
  auto inputs = torch::randn({kSteps, 16, 6});
  auto targets = torch::randint(0, 3, {kSteps, 16});

  auto reference = makeNet();
  torch::optim::SGD sgd(reference->parameters(), torch::optim::SGDOptions(kLr).weight_decay(kWd));
  for (int s = 0; s < kSteps; ++s) {
    sgd.zero_grad();
    torch::cross_entropy_loss(reference->forward(inputs[s]), targets[s]).backward();
    sgd.step();
  }

  auto net = makeNet();
  auto flat = FlatModel::create(net.ptr());
  ASSERT_TRUE(flat.ok()) << flat.status();
  const auto specs = toSegmentSpecs(flat->paramLayout());
  MethodRegistry methods;
  ASSERT_TRUE(registerBuiltinMethods(methods).ok());
  JobSpec job;
  job.method = "asgd";
  job.method_options.setWeightDecay(kWd).setMomentum(0);
  job.server.lr = LrSchedule{kLr, {}, 0.1, 0};

  LocalHub hub(2);
  std::vector<float> initial(flat->params().begin(), flat->params().end());
  std::vector<float> initial_buffers(flat->buffers().begin(), flat->buffers().end());
  std::thread server([&] {
    auto endpoint = hub.endpoint(0);
    auto stats = runShard(*endpoint, job, methods, specs, initial, initial_buffers,
                                flat->paramLayout().fingerprint());
    EXPECT_TRUE(stats.ok()) << stats.status();
  });
  auto endpoint = hub.endpoint(1);
  auto client = makeWorkerClient(*endpoint, job, methods, specs, flat->buffers().size());
  ASSERT_TRUE(client.ok()) << client.status();
  auto worker = PsWorker::start(*flat, std::move(*client));
  ASSERT_TRUE(worker.ok()) << worker.status();
  for (int s = 0; s < kSteps; ++s) {
    (*worker)->zeroGrad();
    torch::cross_entropy_loss(net->forward(inputs[s]), targets[s]).backward();
    ASSERT_TRUE((*worker)->step().ok());
    EXPECT_GT((*worker)->lastStep().bytes_up, 0u);
  }
  ASSERT_TRUE((*worker)->syncBuffers().ok());
  ASSERT_TRUE((*worker)->leave().ok());
  EXPECT_FALSE((*worker)->step().ok());  // it has left the job
  server.join();

  auto expected = reference->parameters();
  auto actual = net->parameters();
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(torch::allclose(actual[i], expected[i], 1e-5, 1e-6)) << "parameter " << i;
  }
}

}  // namespace
}  // namespace sparseps

// One training step's compute (zero_grad, forward, cross-entropy, backward) of the
// experiment models on one thread, with the module's own parameters and with them in a
// FlatModel's flat buffers (what every rank trains with). The first is the compute bound
// of the end-to-end throughput benchmark (bench/e2e-throughput): cores / seconds per step.
// Args: model (0 small_resnet 1x28x28, 1 resnet20 3x32x32, 2 resnet18_cifar 3x32x32,
// 3 resnet50 3x128x128, 4 resnet50 3x224x224: Imagenette's --image-size=128 and its
// default), batch size, flat (0/1). Malloc is tuned as the driver tunes it (core/runtime/allocator.h).
// Before timing, the flat model's loss is checked equal to the plain one's on the same
// weights and batch.

#include <benchmark/benchmark.h>
#include <torch/nn/functional/loss.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/runtime/allocator.h"
#include "core/torch/flat_model.h"
#include "experiments/models/model_factory.h"

namespace sparseps {
namespace {

struct ModelCase {
  const char* name;
  int64_t channels;
  int64_t side;
};
constexpr ModelCase kModels[] = {{"small_resnet", 1, 28},
                                 {"resnet20", 3, 32},
                                 {"resnet18_cifar", 3, 32},
                                 {"resnet50", 3, 128},
                                 {"resnet50", 3, 224}};

std::shared_ptr<ImageClassifier> freshModel(const ModelCase& m) {
  torch::manual_seed(7);
  auto net = makeModel(m.name, 10, m.channels);
  if (!net.ok()) {
    std::fprintf(stderr, "bench_step: %s\n", std::string(net.status().message()).c_str());
    std::abort();
  }
  (*net)->train();
  return *net;
}

double lossOf(ImageClassifier& net, const torch::Tensor& x, const torch::Tensor& y) {
  return torch::nn::functional::cross_entropy(net.forward(x), y).item<double>();
}

void BM_Step(benchmark::State& state) {
  keepFreedMemory();
  torch::set_num_threads(1);
  const ModelCase& m = kModels[state.range(0)];
  const int64_t batch = state.range(1);
  const bool flat = state.range(2) != 0;
  state.SetLabel(std::string(m.name) + " " + std::to_string(m.side) + "px" +
                 (flat ? " flat" : " plain"));
  torch::manual_seed(11);
  const torch::Tensor x = torch::randn({batch, m.channels, m.side, m.side});
  const torch::Tensor y = torch::randint(0, 10, {batch});

  auto net = freshModel(m);
  std::optional<FlatModel> flat_model;
  if (flat) {
    flat_model.emplace(*FlatModel::create(net));
    auto reference = freshModel(m);  // same seed: same weights, module-owned
    const double want = lossOf(*reference, x, y), got = lossOf(*net, x, y);
    if (std::fabs(want - got) > 1e-5 * std::fabs(want)) {
      std::fprintf(stderr, "bench_step: flat loss %g differs from plain %g\n", got, want);
      std::abort();
    }
  }
  auto step = [&] {
    if (flat_model) {
      flat_model->zeroGrad();
    } else {
      net->zero_grad();
    }
    torch::nn::functional::cross_entropy(net->forward(x), y).backward();
  };
  step();  // warm-up: the first step sizes every buffer
  for (auto _ : state) step();
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Step)
    ->ArgsProduct({{0, 1, 2}, {64}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// ResNet-50 at Imagenette's two sizes, batch 16, as the workers train it.
BENCHMARK(BM_Step)
    ->ArgsProduct({{3, 4}, {16}, {1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparseps

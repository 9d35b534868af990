#include "experiments/driver/print_model.h"

#include <torch/torch.h>

#include <cstdio>
#include <numeric>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/driver/rank_setup.h"

namespace sparseps {
namespace {

// The test images scored for the input statistics (or all, when there are fewer).
constexpr int64_t kInputImages = 1000;

std::vector<double> perChannel(const torch::Tensor& t) {
  const torch::Tensor d = t.to(torch::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

}  // namespace

absl::Status printModel(const DriverConfig& config) {
  auto data = loadDataset(config);
  if (!data.ok()) return data.status();
  torch::manual_seed(config.job.seed);  // as the server seeds the model every worker starts from
  auto model = buildModel(config, **data);
  if (!model.ok()) return model.status();
  nlohmann::json parameters = nlohmann::json::array();
  for (const auto& p : model->net->named_parameters()) {
    const torch::Tensor v = p.value().detach().to(torch::kDouble);
    parameters.push_back({{"name", p.key()},
                          {"shape", p.value().sizes().vec()},
                          {"numel", p.value().numel()},
                          {"mean", v.mean().item<double>()},
                          {"std", v.numel() > 1 ? v.std().item<double>() : 0.0}});
  }
  std::vector<int64_t> indices(std::min(kInputImages, (*data)->size(Split::kTest)));
  std::iota(indices.begin(), indices.end(), 0);
  auto batch = (*data)->getBatch(Split::kTest, indices, /*augment=*/false, 0);
  if (!batch.ok()) return batch.status();
  const torch::Tensor images = batch->images.to(torch::kDouble);
  const nlohmann::json printed = {
      {"model", config.model},
      {"init", config.init},
      {"seed", config.job.seed},
      {"parameters", parameters},
      {"test_images", {{"count", indices.size()},
                       {"channel_mean", perChannel(images.mean({0, 2, 3}))},
                       {"channel_std", perChannel(images.std({0, 2, 3}))}}},
  };
  std::printf("%s\n", printed.dump(1).c_str());
  return absl::OkStatus();
}

}  // namespace sparseps

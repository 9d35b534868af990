#include "core/torch/flat_model.h"

#include <torch/nn/module.h>
#include <torch/types.h>

#include <unordered_set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sparseps {

struct FlatModel::State {
  ParamLayout param_layout;
  ParamLayout buffer_layout;
  std::vector<std::string> untracked_buffers;
  torch::Tensor params;                      // 1-D float32, owns the parameter storage
  torch::Tensor grads;                       // 1-D float32, owns the gradient storage
  torch::Tensor buffers;                     // 1-D float32, owns the float buffer storage
  torch::Device device = torch::kCPU;        // where all three live: the parameters' device
  std::vector<torch::Tensor> param_tensors;  // the module's parameters, layout order
  std::vector<torch::Tensor> grad_views;     // their gradients: views of `grads`
};

namespace {

std::vector<int64_t> shapeOf(const torch::Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}

absl::Span<float> spanOf(const torch::Tensor& t) {
  return absl::Span<float>(t.data_ptr<float>(), static_cast<size_t>(t.numel()));
}

torch::Tensor segmentView(const torch::Tensor& flat, const ParamSegment& s) {
  return flat.narrow(0, static_cast<int64_t>(s.offset), static_cast<int64_t>(s.numel))
      .view(s.shape);
}

torch::TensorOptions floatsOn(torch::Device device) {
  return torch::TensorOptions().dtype(torch::kFloat32).device(device);
}

// Copies each tensor into its segment of a new flat buffer on `device` and re-points it there.
torch::Tensor flatten(const ParamLayout& layout, const std::vector<torch::Tensor>& tensors,
                      torch::Device device) {
  torch::Tensor flat = torch::empty({static_cast<int64_t>(layout.numel())}, floatsOn(device));
  for (size_t i = 0; i < tensors.size(); ++i) {
    torch::Tensor view = segmentView(flat, layout[i]);
    view.copy_(tensors[i].detach());
    tensors[i].set_data(view);
  }
  return flat;
}

}  // namespace

absl::StatusOr<FlatModel> FlatModel::create(std::shared_ptr<torch::nn::Module> module,
                                            CompressedTensors which) {
  if (!module) return absl::InvalidArgumentError("FlatModel::create: null module");
  NamedTensors params, buffers;
  for (const auto& item : module->named_parameters(/*recurse=*/true)) {
    params.emplace_back(item.key(), item.value());
  }
  for (const auto& item : module->named_buffers(/*recurse=*/true)) {
    buffers.emplace_back(item.key(), item.value());
  }
  return create(params, buffers, which);
}

absl::StatusOr<FlatModel> FlatModel::create(const NamedTensors& params,
                                            const NamedTensors& buffers,
                                            CompressedTensors which) {
  auto state = std::make_unique<State>();
  torch::NoGradGuard no_grad;

  std::unordered_set<const void*> seen;
  for (const auto& [name, p] : params) {
    if (!p.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("FlatModel: parameter '", name, "' is an undefined tensor"));
    }
    if (state->param_tensors.empty()) state->device = p.device();
    if (p.scalar_type() != torch::kFloat32 || p.device() != state->device) {
      return absl::InvalidArgumentError(
          absl::StrCat("FlatModel: parameter '", name, "' is ", std::string(p.toString()), " on ",
                       p.device().str(), "; only float32 parameters, all on one device (here ",
                       state->device.str(), "), can live in the flat buffer"));
    }
    if (!seen.insert(p.unsafeGetTensorImpl()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("FlatModel: parameter '", name,
                       "' is a tensor already registered under "
                       "another name; shared parameters are not supported"));
    }
    state->param_layout.add(name, shapeOf(p), which);
    state->param_tensors.push_back(p);
  }
  std::vector<torch::Tensor> float_buffers;
  for (const auto& [name, b] : buffers) {
    if (!b.defined() || b.scalar_type() != torch::kFloat32 || b.device() != state->device) {
      state->untracked_buffers.push_back(name);
      continue;
    }
    if (!seen.insert(b.unsafeGetTensorImpl()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("FlatModel: buffer '", name,
                       "' is a tensor already registered under "
                       "another name; shared buffers are not supported"));
    }
    state->buffer_layout.add(name, shapeOf(b), /*compressed=*/false);
    float_buffers.push_back(b);
  }

  state->params = flatten(state->param_layout, state->param_tensors, state->device);
  state->buffers = flatten(state->buffer_layout, float_buffers, state->device);
  state->grads =
      torch::zeros({static_cast<int64_t>(state->param_layout.numel())}, floatsOn(state->device));
  for (size_t i = 0; i < state->param_tensors.size(); ++i) {
    state->grad_views.push_back(segmentView(state->grads, state->param_layout[i]));
    state->param_tensors[i].mutable_grad() = state->grad_views.back();
  }
  return FlatModel(std::move(state));
}

FlatModel::FlatModel(std::unique_ptr<State> state) : state_(std::move(state)) {}
FlatModel::FlatModel(FlatModel&&) noexcept = default;
FlatModel& FlatModel::operator=(FlatModel&&) noexcept = default;
FlatModel::~FlatModel() = default;

const ParamLayout& FlatModel::paramLayout() const { return state_->param_layout; }
const ParamLayout& FlatModel::bufferLayout() const { return state_->buffer_layout; }

uint64_t FlatModel::fingerprint() const {
  // Mixed so that swapping the two layouts changes the result.
  return paramLayout().fingerprint() ^ (bufferLayout().fingerprint() * 0x9e3779b97f4a7c15ULL);
}

absl::Span<float> FlatModel::params() { return spanOf(state_->params); }
absl::Span<const float> FlatModel::params() const { return spanOf(state_->params); }
absl::Span<float> FlatModel::grads() { return spanOf(state_->grads); }
absl::Span<const float> FlatModel::grads() const { return spanOf(state_->grads); }
absl::Span<float> FlatModel::buffers() { return spanOf(state_->buffers); }
absl::Span<const float> FlatModel::buffers() const { return spanOf(state_->buffers); }

bool FlatModel::onDevice() const { return !state_->device.is_cpu(); }
int FlatModel::deviceIndex() const { return state_->device.is_cpu() ? -1 : state_->device.index(); }

namespace {

torch::Tensor hostView(absl::Span<const float> host) {
  return torch::from_blob(const_cast<float*>(host.data()), {static_cast<int64_t>(host.size())},
                          torch::kFloat32);
}

absl::Status checkSize(const char* what, size_t got, const torch::Tensor& flat) {
  if (got == static_cast<size_t>(flat.numel())) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("FlatModel: ", what, " of ", got,
                                                 " floats; the flat buffer has ", flat.numel()));
}

// `what` names the call in the size error.
absl::Status copyToHost(const char* what, const torch::Tensor& flat, absl::Span<float> host) {
  if (auto s = checkSize(what, host.size(), flat); !s.ok()) return s;
  hostView(host).copy_(flat);
  return absl::OkStatus();
}

absl::Status copyFromHost(const char* what, absl::Span<const float> host, torch::Tensor& flat) {
  if (auto s = checkSize(what, host.size(), flat); !s.ok()) return s;
  torch::NoGradGuard no_grad;
  flat.copy_(hostView(host));
  return absl::OkStatus();
}

}  // namespace

absl::Status FlatModel::readParams(absl::Span<float> host) const {
  return copyToHost("readParams into", state_->params, host);
}
absl::Status FlatModel::writeParams(absl::Span<const float> host) {
  return copyFromHost("writeParams from", host, state_->params);
}
absl::Status FlatModel::readBuffers(absl::Span<float> host) const {
  return copyToHost("readBuffers into", state_->buffers, host);
}
absl::Status FlatModel::writeBuffers(absl::Span<const float> host) {
  return copyFromHost("writeBuffers from", host, state_->buffers);
}

void FlatModel::zeroGrad() {
  torch::NoGradGuard no_grad;
  state_->grads.zero_();
  for (size_t i = 0; i < state_->param_tensors.size(); ++i) {
    torch::Tensor& grad = state_->param_tensors[i].mutable_grad();
    const torch::Tensor& view = state_->grad_views[i];
    if (!grad.defined() || grad.data_ptr() != view.data_ptr() || !grad.is_contiguous()) {
      grad = view;
    }
  }
}

void FlatModel::gatherGrads() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < state_->param_tensors.size(); ++i) {
    torch::Tensor& grad = state_->param_tensors[i].mutable_grad();
    torch::Tensor& view = state_->grad_views[i];
    if (grad.defined() && grad.data_ptr() == view.data_ptr() && grad.is_contiguous()) continue;
    if (grad.defined()) {
      view.copy_(grad);
    } else {
      view.zero_();
    }
    grad = view;
  }
}

const std::vector<std::string>& FlatModel::untrackedBuffers() const {
  return state_->untracked_buffers;
}

}  // namespace sparseps

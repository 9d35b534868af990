#pragma once
// FlatModel: the model adapter between LibTorch and the flat float buffers that the
// parameter server, the methods and the wire format work on. It copies a module's
// parameters into one contiguous float32 buffer and re-points every parameter at a view
// of it (set_data), gives every parameter a gradient that is a view of a second buffer
// (autograd then accumulates into it in place), and does the same for the module's float
// buffers (BatchNorm running_mean / running_var) in a third buffer. After that, writing
// the flat parameter buffer *is* updating the model, and after backward() the flat
// gradient buffer holds the gradients; nothing is copied per step.
//
// Rules that keep the views intact:
//  - Clear gradients with zeroGrad(), which fills the flat gradient buffer with 0 and
//    re-attaches any gradient that was replaced or reset (for instance by
//    torch::optim::Optimizer::zero_grad(), which sets gradients to undefined).
//  - Don't move the module to another device or dtype after flattening, and don't call
//    set_data on its parameters: that detaches them from the flat buffer.
// The flat buffers live where the module's parameters are (move the module first: a GPU
// worker's flat buffers are then device memory, and so is every span below; readParams
// and the other copies reach them from the host).
//  - Non-float buffers (BatchNorm's int64 num_batches_tracked) stay owned by the module
//    and are listed by untrackedBuffers(). BatchNorm only reads num_batches_tracked when
//    its momentum is unset (cumulative average), which our models do only while the
//    driver recomputes an evaluated model's statistics (and that resets the count first),
//    so the evaluated model needs only the float buffers.
// The flat buffers are torch-owned storage shared with the module's tensors, so a module
// that outlives its FlatModel stays valid (it just stops being reachable through spans).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/runtime/param_layout.h"

namespace at {
class Tensor;
}  // namespace at
namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace sparseps {

class FlatModel {
 public:
  // Flattens `module` (all of its parameters, recursively, in named_parameters() order;
  // its float32 buffers in named_buffers() order). Fails with InvalidArgument when a
  // parameter is not float32, the parameters are on more than one device, or one tensor is
  // registered under two names. Float buffers on another device stay in the module.
  // `which` picks the parameters the sparse methods compress (param_layout.h).
  static absl::StatusOr<FlatModel> create(std::shared_ptr<torch::nn::Module> module,
                                          CompressedTensors which = CompressedTensors::kMultiDim);
  // The same from named tensors (a Python module's named_parameters() and
  // named_buffers()): non-float32 buffers are left out and listed by untrackedBuffers().
  using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;
  static absl::StatusOr<FlatModel> create(const NamedTensors& params,
                                          const NamedTensors& buffers,
                                          CompressedTensors which = CompressedTensors::kMultiDim);

  FlatModel(FlatModel&&) noexcept;
  FlatModel& operator=(FlatModel&&) noexcept;
  FlatModel(const FlatModel&) = delete;
  FlatModel& operator=(const FlatModel&) = delete;
  ~FlatModel();

  const ParamLayout& paramLayout() const;   // parameters; compressed as create's `which`
  const ParamLayout& bufferLayout() const;  // float buffers; all dense
  // The model's identity in the handshake and in checkpoints: both layouts, so a rank
  // built without the module's BN buffers is refused at connect time, not at the first sync.
  uint64_t fingerprint() const;

  absl::Span<float> params();
  absl::Span<const float> params() const;
  absl::Span<float> grads();
  absl::Span<const float> grads() const;
  absl::Span<float> buffers();
  absl::Span<const float> buffers() const;

  // Whether the flat buffers are in a GPU's memory, and its index (-1 on the CPU).
  bool onDevice() const;
  int deviceIndex() const;
  // Copies between the flat parameters or buffers and host memory of their size.
  absl::Status readParams(absl::Span<float> host) const;
  absl::Status writeParams(absl::Span<const float> host);
  absl::Status readBuffers(absl::Span<float> host) const;
  absl::Status writeBuffers(absl::Span<const float> host);

  // Fills the flat gradient buffer with 0 and re-attaches replaced or reset gradients.
  void zeroGrad();
  // Makes the flat gradient buffer hold every parameter's current gradient, whoever
  // cleared it: a gradient that backward() put in a tensor of its own (because it had been
  // reset to undefined, as torch's zero_grad(set_to_none=True) does) is copied in and the
  // view re-attached; a parameter without a gradient contributes zeros. When every
  // gradient is still its view, this only compares pointers.
  void gatherGrads();

  // Names of buffers that are not float32 and therefore stay in the module.
  const std::vector<std::string>& untrackedBuffers() const;

 private:
  struct State;
  explicit FlatModel(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// A rank's model as the runtime sees it: the flat buffers, and the segments the methods
// work on (the layout's, toSegmentSpecs). The experiment driver's keeps its module beside
// it (experiments/driver/rank_setup.h).
struct RankModel {
  explicit RankModel(FlatModel model)
      : flat(std::move(model)), specs(toSegmentSpecs(flat.paramLayout())) {}
  FlatModel flat;
  SegmentSpecs specs;
};

}  // namespace sparseps

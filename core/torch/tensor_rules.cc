#include "core/torch/tensor_rules.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compressors/half_rounding.h"
#include "optim/fatal.h"
#include "optim/message_ops.h"
#include "optim/segment_index.h"
#include "optim/selection.h"
#include "optim/worker_state.h"

namespace sparseps {
namespace {

// The `numel` floats at p, which live on `device`, as a tensor that shares them.
torch::Tensor wrap(const float* p, size_t numel, c10::Device device) {
  return torch::from_blob(const_cast<float*>(p), {static_cast<int64_t>(numel)},
                          torch::TensorOptions().dtype(torch::kFloat32).device(device));
}

// An empty host tensor of n elements, pinned when it is bound for a GPU.
torch::Tensor hostStaging(size_t n, torch::ScalarType type, c10::Device device) {
  return torch::empty({static_cast<int64_t>(n)},
                      torch::TensorOptions().dtype(type).pinned_memory(device.is_cuda()));
}

// A staging tensor on `device`: itself on the CPU; to a GPU a copy queued without waiting,
// ahead of the kernels that read it.
torch::Tensor moveTo(const torch::Tensor& host, c10::Device device) {
  return device.is_cpu() ? host : host.to(device, /*non_blocking=*/true);
}

// Host indices as an index tensor on `device` (a copy).
torch::Tensor indexTensor(const std::vector<uint32_t>& indices, c10::Device device) {
  torch::Tensor host = hostStaging(indices.size(), torch::kInt64, device);
  std::copy(indices.begin(), indices.end(), host.data_ptr<int64_t>());
  return moveTo(host, device);
}

// Host floats as a tensor on `device` (a copy).
torch::Tensor valueTensor(absl::Span<const float> values, c10::Device device) {
  torch::Tensor host = hostStaging(values.size(), torch::kFloat32, device);
  std::copy(values.begin(), values.end(), host.data_ptr<float>());
  return moveTo(host, device);
}

// A tensor's floats, copied to the host.
std::vector<float> toHost(const torch::Tensor& t) {
  const torch::Tensor host = t.to(torch::kCPU).contiguous();
  return std::vector<float>(host.data_ptr<float>(), host.data_ptr<float>() + host.numel());
}

// What every tensor rule shares, as optim/'s SegmentWorker does for the host rules: the
// segments of the flat spans, the folded gradient, applying a reply, and checkpoints in
// SegmentWorker's format (so a GPU worker's state loads into a CPU worker and back).
class TensorRule : public WorkerRule {
 public:
  TensorRule(const SegmentSpecs& specs, const MethodOptions& options, c10::Device device)
      : index_(specs), options_(options), device_(device) {}
  TensorRule(const TensorRule&) = delete;
  TensorRule& operator=(const TensorRule&) = delete;

  // The push: the rule's segments (pushSegments), then its dense ones copied out together.
  void makePush(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                Message* push) final {
    torch::NoGradGuard no_grad;
    push->resize(index_.size());
    pushSegments(grad, w, ctx, push);
    if (dense_.empty()) return;
    std::vector<torch::Tensor> parts;
    for (const DenseSlot& d : dense_) parts.push_back(d.x.reshape({-1}));
    const std::vector<float> host = toHost(torch::cat(parts));
    size_t at = 0;
    for (const DenseSlot& d : dense_) {
      const auto numel = static_cast<size_t>(d.x.numel());
      setDense(d.s, d.id, absl::MakeConstSpan(host.data() + at, numel), d.scale);
      at += numel;
    }
    dense_.clear();
  }

  // A dense segment is the model (w = values), a sparse one a delta (w = w + s).
  void applyReply(const Message& reply, absl::Span<float> w) override {
    torch::NoGradGuard no_grad;
    for (const SegmentData& s : reply) {
      const ptrdiff_t at = index_.find(s.segment_id);
      if (at < 0 || s.coded() || s.borrowed != nullptr) {
        fatal("tensor rule: reply segment ", s.segment_id,
              " is not a dense or sparse segment of its specs");
      }
      torch::Tensor seg = segment(w, index_[static_cast<size_t>(at)]);
      if (s.dense) {
        seg.copy_(valueTensor(s.values, device_));
      } else if (!s.indices.empty()) {
        seg.index_add_(0, indexTensor(s.indices, device_), valueTensor(s.values, device_));
      }
    }
  }

  std::string saveState() const override {
    // Host copies of the state tensors, viewed in optim/worker_state.h's layout (a view
    // stays valid as `host` grows: moving a vector keeps its buffer).
    std::vector<std::vector<float>> host;
    auto hostView = [&host](const torch::Tensor& t) {
      host.push_back(toHost(t));
      return absl::Span<const float>(host.back());
    };
    WorkerStateView state;
    for (const auto* per_spec : arrays_) {
      state.arrays.emplace_back();
      for (const torch::Tensor& a : *per_spec) state.arrays.back().push_back(hostView(a));
    }
    for (const auto* per_spec : residuals_) {
      state.residuals.emplace_back();
      for (size_t i = 0; i < index_.size(); ++i) {
        if (index_[i].compressed) state.residuals.back().push_back(hostView((*per_spec)[i]));
      }
    }
    for (const auto* per_spec : index_lists_) {
      state.index_lists.emplace_back(per_spec->begin(), per_spec->end());
    }
    state.compressors.assign(compressors_.begin(), compressors_.end());
    return writeWorkerState(index_.specs(), state);
  }

  absl::Status loadState(const std::string& bytes) override {
    std::vector<std::vector<size_t>> array_sizes;
    for (const auto* per_spec : arrays_) {
      array_sizes.emplace_back();
      for (const torch::Tensor& a : *per_spec) {
        array_sizes.back().push_back(static_cast<size_t>(a.numel()));
      }
    }
    absl::StatusOr<WorkerState> state =
        loadWorkerState(bytes, index_.specs(), array_sizes, residuals_.size(), index_lists_.size(),
                        compressors_, options_.seed);
    if (!state.ok()) return state.status();
    torch::NoGradGuard no_grad;
    for (size_t k = 0; k < arrays_.size(); ++k) {
      for (size_t i = 0; i < index_.size(); ++i) {
        (*arrays_[k])[i].copy_(valueTensor(state->arrays[k][i], device_));
      }
    }
    for (size_t k = 0; k < residuals_.size(); ++k) {
      size_t next = 0;
      for (size_t i = 0; i < index_.size(); ++i) {
        if (index_[i].compressed) {
          (*residuals_[k])[i].copy_(valueTensor(state->residuals[k][next++], device_));
        }
      }
    }
    for (size_t k = 0; k < index_lists_.size(); ++k) {
      *index_lists_[k] = std::move(state->index_lists[k]);
    }
    return absl::OkStatus();
  }

 protected:
  // State kept in checkpoints, registered in SegmentWorker's order (from the constructor):
  // one tensor per spec; a residual per compressed spec (others hold an empty tensor); one
  // index list per spec; a compressor's own state (the selectors keep none).
  // Fills every slot of the push (resized to the specs), dense ones through pushDense.
  virtual void pushSegments(absl::Span<const float> grad, absl::Span<const float> w,
                            const StepContext& ctx, Message* push) = 0;

  void keepState(std::vector<torch::Tensor>* per_spec) { arrays_.push_back(per_spec); }
  void keepResiduals(std::vector<torch::Tensor>* per_spec) { residuals_.push_back(per_spec); }
  void keepState(std::vector<std::vector<uint32_t>>* per_spec) { index_lists_.push_back(per_spec); }
  void keepState(Compressor* compressor) { compressors_.push_back(compressor); }

  // One zero tensor per spec on the device, or only for compressed specs.
  std::vector<torch::Tensor> zeroState(bool compressed_only) const {
    std::vector<torch::Tensor> state(index_.size());
    for (size_t i = 0; i < index_.size(); ++i) {
      const int64_t numel =
          compressed_only && !index_[i].compressed ? 0 : static_cast<int64_t>(index_[i].numel);
      state[i] =
          torch::zeros({numel}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
    }
    return state;
  }

  torch::Tensor segment(absl::Span<const float> flat, const SegmentSpec& spec) const {
    if (spec.offset + spec.numel > flat.size()) {
      fatal("tensor rule: a span of ", flat.size(), " floats does not cover segment ", spec.id);
    }
    return wrap(flat.data() + spec.offset, spec.numel, device_);
  }
  torch::Tensor segment(absl::Span<float> flat, const SegmentSpec& spec) const {
    return segment(absl::Span<const float>(flat), spec);
  }
  // g = grad + wd * w of one segment at the step's wd (a new tensor).
  torch::Tensor folded(absl::Span<const float> grad, absl::Span<const float> w,
                       const SegmentSpec& spec, const StepContext& ctx) const {
    return segment(grad, spec).add(segment(w, spec), options_.weightDecayAt(ctx.step));
  }
  // Makes *s the dense segment of spec holding scale * x, once the rule's pushSegments has
  // returned: the push's dense segments are copied to the host together, one copy and one
  // wait for the device. x must not change before then.
  void pushDense(SegmentData* s, const SegmentSpec& spec, torch::Tensor x, float scale = 1.0f) {
    dense_.push_back(DenseSlot{s, spec.id, std::move(x), scale});
  }
  // Selects from x (device memory: the registry's device path) into *s.
  void select(const Compressor& selector, const torch::Tensor& x, double density,
              const SegmentSpec& spec, uint64_t step, SegmentData* s) const {
    selector.compress(absl::Span<const float>(x.data_ptr<float>(), static_cast<size_t>(x.numel())),
                      density, SelectContext{spec.id, step, options_.seed, spec.rows}, s);
  }

  // Error feedback around a selector, as compressors/error_feedback.h does it: v = v + x,
  // s = the selection of v, v = v - s. Returns s's indices on the device (undefined when
  // it selected nothing).
  torch::Tensor selectFeedingBack(const Compressor& selector, torch::Tensor& v,
                                  const torch::Tensor& x, double density, const SegmentSpec& spec,
                                  uint64_t step, SegmentData* s) const {
    v.add_(x);
    select(selector, v, density, spec, step, s);
    if (s->indices.empty()) return {};
    torch::Tensor at = indexTensor(s->indices, device_);
    v.index_add_(0, at, valueTensor(s->values, device_), /*alpha=*/-1);
    return at;
  }

  SegmentIndex index_;
  MethodOptions options_;
  c10::Device device_;

 private:
  struct DenseSlot {
    SegmentData* s;
    uint32_t id;
    torch::Tensor x;
    float scale;
  };
  std::vector<DenseSlot> dense_;  // this push's, until makePush copies them out
  std::vector<std::vector<torch::Tensor>*> arrays_;
  std::vector<std::vector<torch::Tensor>*> residuals_;
  std::vector<std::vector<std::vector<uint32_t>>*> index_lists_;
  std::vector<Compressor*> compressors_;
};

// msgd: u = m*u + g; push lr*u dense.
class MsgdTensorRule : public TensorRule {
 public:
  MsgdTensorRule(const SegmentSpecs& specs, const MethodOptions& options, c10::Device device)
      : TensorRule(specs, options, device), u_(zeroState(false)) {
    keepState(&u_);
  }
  void pushSegments(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                    Message* push) override {
    for (size_t i = 0; i < index_.size(); ++i) {
      u_[i].mul_(options_.momentum).add_(folded(grad, w, index_[i], ctx));
      pushDense(&(*push)[i], index_[i], u_[i], ctx.lr);
    }
  }

 private:
  std::vector<torch::Tensor> u_;
};

// asgd: push lr*g dense.
class AsgdTensorRule : public TensorRule {
 public:
  using TensorRule::TensorRule;
  void pushSegments(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                    Message* push) override {
    for (size_t i = 0; i < index_.size(); ++i) {
      pushDense(&(*push)[i], index_[i], folded(grad, w, index_[i], ctx), ctx.lr);
    }
  }
};

// dgs (SAMomentum), as optim/dgs.cc: u = m*u at the coordinates the last push sent (the
// division by m of the unsent ones is deferred, as there); u = u + lr*g; push the top-k
// of u at the rule's density (MethodOptions::dgsDensityAt); with f16, u of a sent coordinate
// is the rounded value sent.
// Dense segments: u = m*u + lr*g, pushed dense.
class DgsTensorRule : public TensorRule {
 public:
  DgsTensorRule(const SegmentSpecs& specs, const MethodOptions& options, c10::Device device)
      : TensorRule(specs, options, device),
        u_(zeroState(false)),
        sent_(index_.size()),
        selector_(makeSelector(options.selection, options.f16)) {
    keepState(&u_);
    keepState(&sent_);
  }
  void pushSegments(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                    Message* push) override {
    const double m = options_.momentum;
    const double density = options_.dgsDensityAt(ctx.lr);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      torch::Tensor& u = u_[i];
      SegmentData& s = (*push)[i];
      if (!spec.compressed) {
        u.mul_(m).add_(folded(grad, w, spec, ctx), ctx.lr);
        pushDense(&s, spec, u);
        continue;
      }
      if (!sent_[i].empty()) {
        const torch::Tensor sent = indexTensor(sent_[i], device_);
        u.index_put_({sent}, u.index({sent}).mul_(m));
      }
      u.add_(folded(grad, w, spec, ctx), ctx.lr);
      select(*selector_, u, density, spec, ctx.step, &s);
      sent_[i].assign(s.indices.begin(), s.indices.end());
      if (options_.f16 && !s.indices.empty()) {
        u.index_put_({indexTensor(s.indices, device_)}, valueTensor(s.values, device_));
      }
    }
  }

 private:
  std::vector<torch::Tensor> u_;
  std::vector<std::vector<uint32_t>> sent_;
  std::unique_ptr<Compressor> selector_;
};

// gd with a selector, as optim/gd.cc: v = v + lr*g; s = topk(v); push s; v = v - s (the
// rounded s with f16); without error feedback push topk(lr*g). Dense segments: lr*g dense.
class GdTensorRule : public TensorRule {
 public:
  GdTensorRule(const SegmentSpecs& specs, const MethodOptions& options, c10::Device device)
      : TensorRule(specs, options, device),
        v_(zeroState(true)),
        selector_(makeSelector(options.selection, options.f16)) {
    if (options.gd.error_feedback) keepResiduals(&v_);
    keepState(selector_.get());
  }
  void pushSegments(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                    Message* push) override {
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      SegmentData& s = (*push)[i];
      const torch::Tensor lr_g = folded(grad, w, spec, ctx).mul_(ctx.lr);
      if (!spec.compressed) {
        pushDense(&s, spec, lr_g);
        continue;
      }
      if (!options_.gd.error_feedback) {
        select(*selector_, lr_g, options_.density, spec, ctx.step, &s);
        continue;
      }
      selectFeedingBack(*selector_, v_[i], lr_g, options_.density, spec, ctx.step, &s);
    }
  }

 private:
  std::vector<torch::Tensor> v_;  // per compressed spec (others empty)
  std::unique_ptr<Compressor> selector_;
};

// dgc, as optim/dgc.cc: optional clipping of the whole gradient; u = m*u + g, x = u
// (Nesterov: u = m*(u + g), x = u + g); v = v + x; s = topk(v, r at the epoch's warm-up
// density); v = v - s; u = 0 where sent; push lr*s (with f16 rounded to half, v keeping
// what the rounding took, in its own units). Dense segments push lr*x.
class DgcTensorRule : public TensorRule {
 public:
  DgcTensorRule(const SegmentSpecs& specs, const MethodOptions& options, c10::Device device)
      : TensorRule(specs, options, device),
        u_(zeroState(false)),
        v_(zeroState(true)),
        selector_(makeSelector(options.selection)) {
    keepState(&u_);
    keepResiduals(&v_);
  }
  void pushSegments(absl::Span<const float> grad, absl::Span<const float> w, const StepContext& ctx,
                    Message* push) override {
    const double m = options_.momentum;
    const double coef = clipCoefficient(grad, w, options_.weightDecayAt(ctx.step));
    const double density = options_.dgc.densityAt(ctx.epoch, options_.density);
    for (size_t i = 0; i < index_.size(); ++i) {
      const SegmentSpec& spec = index_[i];
      torch::Tensor g = folded(grad, w, spec, ctx);
      if (coef != 1.0) g.mul_(coef);
      torch::Tensor& u = u_[i];
      torch::Tensor x;
      if (options_.dgc.nesterov) {
        u.add_(g).mul_(m);
        x = u.add(g);
      } else {
        u.mul_(m).add_(g);
        x = u;
      }
      SegmentData& s = (*push)[i];
      if (!spec.compressed) {
        pushDense(&s, spec, x, ctx.lr);
        continue;
      }
      const torch::Tensor at = selectFeedingBack(*selector_, v_[i], x, density, spec, ctx.step, &s);
      if (!at.defined()) continue;
      u.index_fill_(0, at, 0.0f);
      for (float& value : s.values) value *= ctx.lr;
      if (options_.f16) {
        std::vector<float> taken(s.values);
        roundValuesToHalf(&s);
        for (size_t t = 0; t < taken.size(); ++t) taken[t] = (taken[t] - s.values[t]) / ctx.lr;
        v_[i].index_add_(0, at, valueTensor(taken, device_));
      }
    }
  }

 private:
  // min(1, thr / |g|), thr = clip_norm / sqrt(N), |g| over the whole model in double; 1
  // when clipping is off.
  double clipCoefficient(absl::Span<const float> grad, absl::Span<const float> w,
                         double wd) const {
    if (options_.dgc.clip_norm <= 0.0) return 1.0;
    double sum = 0.0;
    for (const SegmentSpec& spec : index_.specs()) {
      const torch::Tensor g =
          segment(grad, spec).to(torch::kFloat64).add(segment(w, spec).to(torch::kFloat64), wd);
      sum += g.square().sum().item<double>();
    }
    const double norm = std::sqrt(sum);
    const double thr =
        options_.dgc.clip_norm / std::sqrt(static_cast<double>(options_.num_workers));
    return norm > thr ? static_cast<float>(thr / norm) : 1.0;
  }

  std::vector<torch::Tensor> u_;
  std::vector<torch::Tensor> v_;  // per compressed spec (others empty)
  std::unique_ptr<Compressor> selector_;
};

}  // namespace

absl::Status checkTensorWorkerRule(const std::string& method, const MethodOptions& options) {
  if (method == "msgd" || method == "asgd" || method == "dgs" || method == "dgc") {
    return absl::OkStatus();
  }
  if (method == "gd" && options.gd.compressor.empty()) return absl::OkStatus();
  const std::string what =
      method == "gd" ? absl::StrCat("gd with --compressor=", options.gd.compressor) : method;
  return absl::InvalidArgumentError(absl::StrCat(
      "the worker rule of ", what,
      " runs on the CPU only: GPU workers (--device=cuda) run "
      "msgd, asgd, dgs, dgc and gd with any --selection; use --device=cpu for ",
      what));
}

absl::StatusOr<std::unique_ptr<WorkerRule>> makeTensorWorkerRule(const SegmentSpecs& specs,
                                                                 const CheckedOptions& checked,
                                                                 c10::Device device) {
  const std::string name = checked.method().name();
  const MethodOptions& options = *checked;
  if (auto s = checkTensorWorkerRule(name, options); !s.ok()) return s;
  if (name == "msgd") return std::make_unique<MsgdTensorRule>(specs, options, device);
  if (name == "asgd") return std::make_unique<AsgdTensorRule>(specs, options, device);
  if (name == "dgs") return std::make_unique<DgsTensorRule>(specs, options, device);
  if (name == "dgc") return std::make_unique<DgcTensorRule>(specs, options, device);
  return std::make_unique<GdTensorRule>(specs, options, device);
}

}  // namespace sparseps

#include "python/src/rule.h"

#include <pybind11/stl.h>
#include <torch/python.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/runtime/protocol.h"
#include "optim/builtin_methods.h"
#include "python/src/flat_input.h"
#include "python/src/status.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

class PyWorkerRule {
 public:
  // One compressed segment per tensor of `numels`, in that order, as a job whose
  // --compressed-tensors is all lays them out.
  PyWorkerRule(const std::string& method, const MethodOptions& options,
               const std::vector<int64_t>& numels) {
    const Method* m = value(methodRegistry().find(method));
    size_t offset = 0;
    for (size_t i = 0; i < numels.size(); ++i) {
      if (numels[i] < 1) throw py::value_error("WorkerRule: every tensor needs an element");
      specs_.push_back(SegmentSpec{static_cast<uint32_t>(i), offset,
                                   static_cast<size_t>(numels[i]), true, 0});
      offset += static_cast<size_t>(numels[i]);
    }
    numel_ = offset;
    rule_ = m->makeWorker(specs_, value(m->check(options)));
  }

  // The push of step `step` (counted from 1, as a worker counts its pushes) for the flat
  // gradient `grad` at the flat model `w`: per tensor, the int64 indices sent and the
  // float32 values there (a dense segment: every index).
  std::vector<std::pair<torch::Tensor, torch::Tensor>> push(const torch::Tensor& grad,
                                                            const torch::Tensor& w, float lr,
                                                            uint64_t step, int epoch) {
    const absl::Span<const float> g = flatInput(grad, "WorkerRule.push");
    const absl::Span<const float> model = flatInput(w, "WorkerRule.push");
    if (g.size() != numel_ || model.size() != numel_) {
      throw py::value_error("WorkerRule.push: grad and w must have the " +
                            std::to_string(numel_) + " elements of the tensors");
    }
    Message message;
    {
      py::gil_scoped_release release;
      rule_->makePush(g, model, StepContext{lr, epoch, step}, &message);
    }
    std::vector<std::pair<torch::Tensor, torch::Tensor>> out;
    for (const SegmentData& s : message) {
      if (s.coded() || s.index_seed) {
        throw py::value_error("WorkerRule.push: the rule sent a coded segment; only rules "
                              "that send values (dense or selected) are supported here");
      }
      const auto n = static_cast<int64_t>(s.values.size());
      torch::Tensor values =
          torch::from_blob(const_cast<float*>(s.values.data()), {n}, torch::kFloat32).clone();
      torch::Tensor indices =
          s.dense ? torch::arange(n, torch::kInt64)
                  : torch::from_blob(const_cast<uint32_t*>(s.indices.data()), {n}, torch::kInt32)
                        .to(torch::kInt64);
      out.emplace_back(std::move(indices), std::move(values));
    }
    return out;
  }

  // The server's dense reply, the model W, applied to the flat model w in place.
  void reply(const torch::Tensor& W, torch::Tensor& w) {
    const absl::Span<const float> server = flatInput(W, "WorkerRule.reply");
    const absl::Span<const float> local = flatInput(w, "WorkerRule.reply");
    if (server.size() != numel_ || local.size() != numel_) {
      throw py::value_error("WorkerRule.reply: W and w must have the " +
                            std::to_string(numel_) + " elements of the tensors");
    }
    const Message message = denseMessage(specs_, server);
    rule_->applyReply(message, absl::MakeSpan(const_cast<float*>(local.data()), local.size()));
  }

 private:
  SegmentSpecs specs_;
  size_t numel_ = 0;
  std::unique_ptr<WorkerRule> rule_;
};

}  // namespace

void bindRule(py::module_& m) {
  py::class_<PyWorkerRule>(m, "WorkerRule", R"(One method's worker rule on flat tensors.

    rule = WorkerRule("dgc", options, [p.numel() for p in model.parameters()])
    sent = rule.push(flat_grad, flat_w, lr, step)   # [(indices, values)] per tensor
    rule.reply(flat_W, flat_w)                      # the dense reply, applied to flat_w)")
      .def(py::init<const std::string&, const MethodOptions&, const std::vector<int64_t>&>(),
           py::arg("method"), py::arg("options"), py::arg("numels"))
      .def("push", &PyWorkerRule::push, py::arg("grad"), py::arg("w"), py::arg("lr"),
           py::arg("step"), py::arg("epoch") = 0)
      .def("reply", &PyWorkerRule::reply, py::arg("W"), py::arg("w"));
}

}  // namespace sparseps::python

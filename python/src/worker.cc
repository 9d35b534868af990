#include "python/src/worker.h"

#include <torch/python.h>

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "core/torch/ps_rank.h"
#include "python/src/blocking_call.h"
#include "python/src/status.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

torch::Tensor newFlat(size_t n) {
  return torch::empty({static_cast<int64_t>(n)}, torch::kFloat32);
}

absl::Span<float> spanOf(const torch::Tensor& flat) {
  return absl::Span<float>(flat.data_ptr<float>(), static_cast<size_t>(flat.numel()));
}

std::unique_ptr<PsWorker> connectWorker(const RankOptions& options,
                                        const FlatModel::NamedTensors& params,
                                        const FlatModel::NamedTensors& buffers) {
  absl::StatusOr<std::unique_ptr<PsWorker>> worker = absl::UnknownError("not connected");
  {
    BlockingCall blocking;
    worker = PsWorker::connect(options, params, buffers);
  }
  return value(std::move(worker));
}

// Runs a call that may wait on other ranks without the GIL; raises its error with it.
template <typename Call>
void blocking(Call call) {
  absl::Status s;
  {
    BlockingCall guard;
    s = call();
  }
  check(s);
}

py::tuple serverModel(PsWorker& worker) {
  torch::Tensor params = newFlat(worker.model().params().size());
  torch::Tensor buffers = newFlat(worker.model().buffers().size());
  blocking([&] { return worker.pullModel(spanOf(params), spanOf(buffers)); });  // in place
  return py::make_tuple(params, buffers);
}

void loadState(PsWorker& worker, const std::string& bytes) {
  // The bytes come from the user (a saved state dict), not a peer: any refusal is theirs.
  const absl::Status s = worker.loadState(bytes);
  if (!s.ok()) throw py::value_error(std::string(s.message()));
}

py::list layout(const PsWorker& worker) {
  py::list out;
  for (const ParamSegment& s : worker.model().paramLayout().segments()) {
    out.append(py::make_tuple(s.name, s.offset, s.numel));
  }
  return out;
}

}  // namespace

void bindWorker(py::module_& m) {
  py::class_<StepStats>(m, "StepStats", "What one step cost and saw.")
      .def_readonly("bytes_up", &StepStats::bytes_up)
      .def_readonly("bytes_down", &StepStats::bytes_down)
      .def_readonly("staleness", &StepStats::staleness)
      .def_readonly("compress_seconds", &StepStats::compress_seconds)
      .def_readonly("communicate_seconds", &StepStats::communicate_seconds);

  py::class_<PsWorker, std::unique_ptr<PsWorker>>(m, "Worker")
      .def(py::init(&connectWorker), py::arg("options"), py::arg("params"), py::arg("buffers"))
      .def("step",
           [](PsWorker& w, int epoch, std::optional<float> lr) {
             blocking([&] { return w.step(epoch, lr); });
           },
           py::arg("epoch"), py::arg("lr") = py::none())
      .def("zero_grad", &PsWorker::zeroGrad)
      .def("sync_buffers", [](PsWorker& w) { blocking([&] { return w.syncBuffers(); }); })
      .def("server_model", &serverModel)
      .def("finish", [](PsWorker& w) { blocking([&] { return w.finish(); }); })
      .def("save_state", [](const PsWorker& w) { return py::bytes(w.saveState()); })
      .def("load_state", &loadState, py::arg("state"))
      .def("layout", &layout)
      .def_property_readonly("lr", &PsWorker::lr)
      .def_property_readonly("steps", &PsWorker::steps)
      .def_property_readonly("initial_version",
                             [](const PsWorker& w) { return w.initial().version; })
      .def_property_readonly("last_step", &PsWorker::lastStep, py::return_value_policy::copy);
}

}  // namespace sparseps::python

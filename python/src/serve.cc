#include "python/src/serve.h"

#include <torch/python.h>

#include <pybind11/stl.h>

#include <cstdio>

#include "core/torch/ps_rank.h"
#include "python/src/blocking_call.h"
#include "python/src/status.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

py::dict serve(RankOptions options, const FlatModel::NamedTensors& params,
               const FlatModel::NamedTensors& buffers, bool verbose) {
  if (verbose) {
    const int rank = options.rank;
    options.server_log = [rank](const std::string& line) {  // runs without the GIL
      std::fprintf(stderr, "[sparseps server %d] %s\n", rank, line.c_str());
    };
  }
  absl::StatusOr<ShardStats> stats = absl::UnknownError("not served");
  {
    BlockingCall blocking;
    stats = serveShard(options, params, buffers);
  }
  const ShardStats served = value(std::move(stats));
  py::dict out;
  out["bytes_in"] = served.bytes_in;
  out["bytes_out"] = served.bytes_out;
  out["messages_in"] = served.messages_in;
  out["messages_out"] = served.messages_out;
  out["dropped_workers"] = served.dropped.size();
  return out;
}

}  // namespace

void bindServe(py::module_& m) {
  m.def("serve", &serve, py::arg("options"), py::arg("params"), py::arg("buffers"),
        py::arg("verbose") = false);
}

}  // namespace sparseps::python

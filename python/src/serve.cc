#include "python/src/serve.h"

#include <torch/python.h>

#include <pybind11/stl.h>

#include <cstdio>

#include "core/job.h"
#include "optim/builtin_methods.h"
#include "python/src/blocking_call.h"
#include "python/src/job_config.h"
#include "python/src/rank.h"
#include "python/src/status.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

py::dict serve(const JobConfig& config, const FlatModel::NamedTensors& params,
               const FlatModel::NamedTensors& buffers, bool verbose) {
  if (!config.isServer()) {
    throw py::value_error("rank " + std::to_string(config.rank) +
                          " is a worker rank: build a sparseps.Optimizer there");
  }
  MethodRegistry methods;
  check(registerBuiltinMethods(methods));
  JobSpec job = value(config.jobSpec(methods));
  RankModel model = value(flattenModel(params, buffers));
  if (verbose) {
    const int rank = config.rank;
    job.server.log = [rank](const std::string& line) {
      std::fprintf(stderr, "[sparseps server %d] %s\n", rank, line.c_str());
    };
  }
  absl::StatusOr<ServerStats> stats = absl::UnknownError("not served");
  {
    BlockingCall blocking;
    auto connection = connect(config, model);
    if (!connection.ok()) {
      stats = connection.status();
    } else {
      stats = runServerShard(*connection->rank->endpoint, job, methods, model.specs,
                             model.flat.params(), model.flat.buffers(), model.fingerprint);
    }
  }
  const ServerStats served = value(std::move(stats));
  py::dict out;
  out["bytes_in"] = served.bytes_in;
  out["bytes_out"] = served.bytes_out;
  out["messages_in"] = served.messages_in;
  out["messages_out"] = served.messages_out;
  out["dropped_workers"] = served.dropped_workers;
  return out;
}

}  // namespace

void bindServe(py::module_& m) {
  m.def("serve", &serve, py::arg("config"), py::arg("params"), py::arg("buffers"),
        py::arg("verbose") = false);
}

}  // namespace sparseps::python

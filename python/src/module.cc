// sparseps._C: the C++ core as a Python extension. The package around it (sparseps/)
// gives it a torch face; see python/sparseps/__init__.py.
#include <torch/python.h>

#include <pybind11/stl.h>

#include "core/allocator.h"
#include "optim/builtin_methods.h"
#include "python/src/compress.h"
#include "python/src/job_config.h"
#include "python/src/serve.h"
#include "python/src/status.h"
#include "python/src/worker.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

void bindJobConfig(py::module_& m) {
  py::class_<MethodOptions>(m, "MethodOptions")
      .def(py::init<>())
      .def_readwrite("momentum", &MethodOptions::momentum)
      .def_readwrite("weight_decay", &MethodOptions::weight_decay)
      .def_readwrite("density", &MethodOptions::density)
      .def_readwrite("server_density", &MethodOptions::server_density)
      .def_property(
          "selection",
          [](const MethodOptions& o) { return o.selection == Selection::kSampled ? "sampled" : "exact"; },
          [](MethodOptions& o, const std::string& v) {
            if (v != "exact" && v != "sampled") {
              throw py::value_error("selection: '" + v + "'; use 'exact' or 'sampled'");
            }
            o.selection = v == "sampled" ? Selection::kSampled : Selection::kExact;
          })
      .def_readwrite("resync_every", &MethodOptions::resync_every)
      .def_readwrite("nesterov", &MethodOptions::nesterov)
      .def_readwrite("clip_norm", &MethodOptions::clip_norm)
      .def_readwrite("warmup", &MethodOptions::warmup)
      .def_readwrite("warmup_densities", &MethodOptions::warmup_densities)
      .def_readwrite("f16", &MethodOptions::f16);

  py::class_<JobConfig>(m, "JobConfig")
      .def(py::init<>())
      .def_readwrite("rank", &JobConfig::rank)
      .def_readwrite("world_size", &JobConfig::world_size)
      .def_readwrite("num_servers", &JobConfig::num_servers)
      .def_readwrite("run_id", &JobConfig::run_id)
      .def_readwrite("master_addr", &JobConfig::master_addr)
      .def_readwrite("master_port", &JobConfig::master_port)
      .def_readwrite("host_store", &JobConfig::host_store)
      .def_readwrite("store_dir", &JobConfig::store_dir)
      .def_readwrite("hostname", &JobConfig::hostname)
      .def_readwrite("iface", &JobConfig::iface)
      .def_readwrite("connect_timeout_s", &JobConfig::connect_timeout_s)
      .def_readwrite("method", &JobConfig::method)
      .def_readwrite("mode", &JobConfig::mode)
      .def_readwrite("staleness", &JobConfig::staleness)
      .def_readwrite("lr", &JobConfig::lr)
      .def_readwrite("milestones", &JobConfig::milestones)
      .def_readwrite("gamma", &JobConfig::gamma)
      .def_readwrite("warmup_epochs", &JobConfig::warmup_epochs)
      .def_readwrite("pushes_per_epoch", &JobConfig::pushes_per_epoch)
      .def_readwrite("downlink", &JobConfig::downlink)
      .def_readwrite("method_options", &JobConfig::method_options)
      .def_readwrite("seed", &JobConfig::seed)
      .def("validate",
           [](const JobConfig& c) {
             MethodRegistry methods;
             check(registerBuiltinMethods(methods));
             value(c.jobSpec(methods));
           },
           "Raises ValueError naming the first bad field.");
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "sparseps C++ core";
  registerErrors(m);
  bindJobConfig(m);
  bindWorker(m);
  bindServe(m);
  bindCompress(m);
  m.def("keep_freed_memory", &keepFreedMemory,
        "Tunes glibc's malloc to reuse freed memory instead of returning it to the kernel "
        "(core/allocator.h): a step no longer page-faults its activations in again.");
}

}  // namespace sparseps::python

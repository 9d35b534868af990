// sparseps._C: the C++ core as a Python extension. The package around it (sparseps/)
// gives it a torch face; see python/sparseps/__init__.py.
#include <torch/python.h>

#include <pybind11/stl.h>

#include "core/runtime/allocator.h"
#include "core/runtime/job_options.h"
#include "optim/builtin_methods.h"
#include "optim/method_option_table.h"
#include "python/src/codec.h"
#include "python/src/compress.h"
#include "python/src/method_library.h"
#include "python/src/rule.h"
#include "core/torch/rank_options.h"
#include "python/src/serve.h"
#include "python/src/status.h"
#include "python/src/worker.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

void bindRankOptions(py::module_& m) {
  // One property per row of the method option table, named as config.json names it.
  auto options = py::class_<MethodOptions>(m, "MethodOptions").def(py::init<>());
  py::list rows;
  for (const MethodOptionRow& row : methodOptionRows()) {
    std::visit(
        Overloaded{
            [&](const ChoiceRef& f) {
              options.def_property(
                  row.name.c_str(), [f](const MethodOptions& o) { return f.get(o); },
                  [f, name = row.name](MethodOptions& o, const std::string& v) {
                    const absl::Status s = f.set(o, v);
                    if (!s.ok()) throw py::value_error(name + std::string(s.message()));
                  });
            },
            [&](const auto& f) {
              using T = std::decay_t<decltype(f.get(MethodOptions()))>;
              options.def_property(
                  row.name.c_str(), [f](const MethodOptions& o) { return f.get(o); },
                  [f](MethodOptions& o, const T& v) { f.of(o) = v; });
            },
        },
        row.ref);
    py::dict info;
    info["name"] = row.name;
    info["help"] = row.help;
    rows.append(info);
  }
  m.attr("METHOD_OPTIONS") = rows;
  // Asked when a job is made: a method loaded since (sparseps.load_methods) counts too.
  m.def("option_readers",
        [](const std::string& name) {
          const MethodOptionRow* row = findMethodOption(name);
          if (row == nullptr) throw py::value_error("no method option " + name);
          return row->readers();
        },
        "The registered methods that read a method option; empty when every method does.");

  // One property per job option row, named as config.json and the keywords name it.
  auto job = py::class_<JobOptions>(m, "JobOptions").def(py::init<>());
  py::list job_rows;
  const JobOptions defaults;
  for (const JobOptionRow& row : jobOptionRows()) {
    std::visit(
        [&](const auto& f) {
          job.def_readwrite(row.name.c_str(), f.member);
          py::dict info;
          info["name"] = row.name;
          info["help"] = row.help;
          info["default"] = defaults.*(f.member);
          job_rows.append(info);
        },
        row.ref);
  }
  job.def_readwrite("method_options", &JobOptions::method_options);
  m.attr("JOB_OPTIONS") = job_rows;

  py::class_<RankOptions>(m, "RankOptions")
      .def(py::init<>())
      .def_readwrite("rank", &RankOptions::rank)
      .def_readwrite("world_size", &RankOptions::world_size)
      .def_readwrite("num_servers", &RankOptions::num_servers)
      .def_readwrite("run_id", &RankOptions::run_id)
      .def_readwrite("master_addr", &RankOptions::master_addr)
      .def_readwrite("master_port", &RankOptions::master_port)
      .def_readwrite("host_store", &RankOptions::host_store)
      .def_readwrite("store_dir", &RankOptions::store_dir)
      .def_readwrite("hostname", &RankOptions::hostname)
      .def_readwrite("iface", &RankOptions::iface)
      .def_readwrite("connect_timeout_s", &RankOptions::connect_timeout_s)
      .def_readwrite("run_secret", &RankOptions::run_secret)
      .def_readwrite("job", &RankOptions::job)
      .def("validate",
           [](const RankOptions& c) {
             value(c.jobSpec(methodRegistry()));
           },
           "Raises ValueError naming the first bad field.");
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "sparseps C++ core";
  registerErrors(m);
  bindRankOptions(m);
  bindWorker(m);
  bindServe(m);
  bindCompress(m);
  bindCodec(m);
  bindRule(m);
  bindMethodLibrary(m);
  m.def("keep_freed_memory", &keepFreedMemory,
        "Tunes glibc's malloc to reuse freed memory instead of returning it to the kernel "
        "(core/runtime/allocator.h): a step no longer page-faults its activations in again.");
}

}  // namespace sparseps::python

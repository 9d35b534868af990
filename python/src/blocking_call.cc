#include "python/src/blocking_call.h"

namespace py = pybind11;

namespace sparseps::python {

BlockingCall::BlockingCall() {
  py::module_ threading = py::module_::import("threading");
  py::module_ signal_module = py::module_::import("signal");
  const bool main_thread =
      threading.attr("current_thread")().is(threading.attr("main_thread")());
  const bool python_default =
      signal_module.attr("getsignal")(SIGINT).is(signal_module.attr("default_int_handler"));
  if (main_thread && python_default) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    restore_ = sigaction(SIGINT, &dfl, &python_handler_) == 0;
  }
  release_.emplace();
}

BlockingCall::~BlockingCall() {
  release_.reset();
  if (restore_) sigaction(SIGINT, &python_handler_, nullptr);
}

}  // namespace sparseps::python

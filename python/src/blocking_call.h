#pragma once
// BlockingCall: surrounds every C++ call that may wait on other ranks (connect, step,
// serve, ...). It releases the GIL, and while it lasts Ctrl-C ends the process at once, as
// it ends a C++ rank. Python's own SIGINT handler only notes the signal for the main loop,
// which runs again only when the call returns: after a peer's timeout, or never for a
// server waiting on its workers. A script's own SIGINT handler is left alone, and so is
// any thread but the main one.

#include <pybind11/pybind11.h>
#include <signal.h>

#include <optional>

namespace sparseps::python {

class BlockingCall {
 public:
  BlockingCall();  // with the GIL held
  ~BlockingCall();
  BlockingCall(const BlockingCall&) = delete;
  BlockingCall& operator=(const BlockingCall&) = delete;

 private:
  bool restore_ = false;
  struct sigaction python_handler_ {};
  std::optional<pybind11::gil_scoped_release> release_;
};

}  // namespace sparseps::python

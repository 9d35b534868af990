#include "python/src/status.h"

#include <string>

namespace sparseps::python {
namespace {

PyObject* peer_error = nullptr;

bool isPeerFailure(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kDeadlineExceeded:
      return true;
    default:
      return false;
  }
}

}  // namespace

void registerErrors(pybind11::module_& m) {
  static pybind11::exception<std::runtime_error> error(
      m, "PeerError", PyExc_RuntimeError);
  error.attr("__doc__") =
      "Another rank of the job died, hung past its timeout, or sent a message that does "
      "not decode. The message names the rank and what went wrong.";
  peer_error = error.ptr();
}

void raise(const absl::Status& status) {
  const std::string message(status.message());
  if (status.code() == absl::StatusCode::kInvalidArgument ||
      status.code() == absl::StatusCode::kNotFound ||
      status.code() == absl::StatusCode::kOutOfRange) {
    throw pybind11::value_error(message);
  }
  if (isPeerFailure(status.code()) && peer_error != nullptr) {
    PyErr_SetString(peer_error, message.c_str());
    throw pybind11::error_already_set();
  }
  throw std::runtime_error(message);
}

}  // namespace sparseps::python

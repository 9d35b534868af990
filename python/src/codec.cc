#include "python/src/codec.h"

#include <pybind11/stl.h>
#include <torch/python.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compressors/apply.h"
#include "compressors/error_feedback.h"
#include "compressors/registry.h"
#include "core/wire/wire.h"
#include "python/src/flat_input.h"
#include "python/src/status.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

class PyCompressor {
 public:
  PyCompressor(const std::string& spec, bool error_feedback)
      : spec_(spec), error_feedback_(error_feedback), memory_(value(makeRegisteredCompressor(spec))) {}

  // x compressed as segment `key` at `step`: the wire message that carries it.
  py::bytes compress(const torch::Tensor& x, double density, uint32_t key, uint64_t step,
                     uint64_t seed) {
    absl::Span<const float> in = flatInput(x, "Compressor.compress");
    checkDensity(density, "Compressor.compress");
    // The matrix view of low-rank compressors: the tensor's first dimension, as a job's
    // layout gives it.
    const SelectContext ctx{key, step, seed,
                            x.dim() > 1 ? static_cast<uint32_t>(x.size(0)) : uint32_t{0}};
    absl::Status encoded;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      // The residual kept for another size would be dropped: two tensors sharing a key.
      const absl::Span<const float> kept = memory_.residual(key);
      if (error_feedback_ && !kept.empty() && kept.size() != in.size()) {
        throw py::value_error("Compressor.compress: key " + std::to_string(key) +
                              " holds the residual of " + std::to_string(kept.size()) +
                              " elements, this tensor has " + std::to_string(in.size()) +
                              "; give each tensor its own key");
      }
      if (error_feedback_) {
        memory_.compress(in, density, ctx, &segment_);
      } else {
        memory_.inner().compress(in, density, ctx, &segment_);
      }
      encoded = encodeMessage(MessageHeader{}, {segment_}, EncodeOptions(), &bytes_);
    }
    check(encoded);
    return py::bytes(reinterpret_cast<const char*>(bytes_.data()), bytes_.size());
  }

  // What error feedback kept back for `key` (zeros before its first compression).
  torch::Tensor residual(uint32_t key, int64_t numel) const {
    std::lock_guard<std::mutex> lock(mu_);
    absl::Span<const float> e = memory_.residual(key);
    torch::Tensor out = torch::zeros({numel}, torch::kFloat32);
    if (!e.empty()) {
      if (static_cast<int64_t>(e.size()) != numel) {
        throw py::value_error("Compressor.residual: segment " + std::to_string(key) + " has " +
                              std::to_string(e.size()) + " elements, not " +
                              std::to_string(numel));
      }
      std::copy(e.begin(), e.end(), out.data_ptr<float>());
    }
    return out;
  }

  const std::string& spec() const { return spec_; }
  bool errorFeedback() const { return error_feedback_; }

 private:
  std::string spec_;
  bool error_feedback_;
  mutable std::mutex mu_;
  ErrorFeedback memory_;  // its inner compressor alone without error feedback
  SegmentData segment_;
  std::vector<uint8_t> bytes_;
};

// The tensor a message made by Compressor.compress decodes to; bad bytes are a ValueError.
torch::Tensor decode(const py::bytes& payload, const std::vector<int64_t>& shape, uint32_t key) {
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) throw py::value_error("decode: negative dimension in shape");
    numel *= d;
  }
  if (numel > static_cast<int64_t>(UINT32_MAX)) {
    throw py::value_error("decode: at most 2^32 - 1 elements per segment");
  }
  const std::string bytes = payload;
  torch::Tensor out = torch::zeros(shape, torch::kFloat32);
  absl::Status status;
  {
    py::gil_scoped_release release;
    absl::StatusOr<DecodedMessage> message = decodeMessage(
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
        DecodeLimits().allow(key, static_cast<uint32_t>(numel)));
    if (!message.ok()) {
      status = message.status();
    } else if (message->segments.size() != 1) {
      status = absl::InvalidArgumentError("the message carries " +
                                          std::to_string(message->segments.size()) +
                                          " segments, not one");
    } else {
      scatterAdd(absl::MakeSpan(out.data_ptr<float>(), static_cast<size_t>(numel)),
                 message->segments[0], 1.0f);
    }
  }
  if (!status.ok()) throw py::value_error("decode: " + std::string(status.message()));
  return out;
}

}  // namespace

void bindCodec(py::module_& m) {
  py::class_<PyCompressor>(m, "Compressor", R"(A compressor of the registry by name.

Compressor("qsgd:levels=4"), Compressor("signsgd", error_feedback=True), ... (see
compressors_help()). compress(x, density, key=, step=, seed=) returns the bytes a push would
carry for x as segment `key` (the wire format: checksummed, validated on decode); decode()
turns them back into a tensor. State is kept per key: error feedback's residual, PowerSGD's
warm start. Stochastic compressors draw from (seed, key, step).)")
      .def(py::init<const std::string&, bool>(), py::arg("spec"), py::arg("error_feedback") = false)
      .def("compress", &PyCompressor::compress, py::arg("x"), py::arg("density") = 0.01,
           py::arg("key") = 0, py::arg("step") = 0, py::arg("seed") = 0,
           "x (a contiguous float32 CPU tensor) compressed: the wire bytes of one segment.")
      .def("residual", &PyCompressor::residual, py::arg("key"), py::arg("numel"),
           "What error feedback holds back for segment `key` (zeros before its first use).")
      .def_property_readonly("spec", &PyCompressor::spec)
      .def_property_readonly("error_feedback", &PyCompressor::errorFeedback);
  m.def("decode", &decode, py::arg("payload"), py::arg("shape"), py::arg("key") = 0,
        "The tensor of `shape` that Compressor.compress's bytes for segment `key` decode to.");
  m.def("compressor_names", [] { return compressorRegistry().names(); });
  m.def("compressors_help", [] { return compressorRegistry().help(); },
        "Every compressor: its name, options with defaults, rule and paper.");
}

}  // namespace sparseps::python

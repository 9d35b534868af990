#include "python/src/compress.h"

#include <torch/python.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compressors/kernels/device_kernels.h"
#include "compressors/random_k.h"
#include "compressors/segment_spec.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"
#include "python/src/flat_input.h"
#include "python/src/status.h"
#if SPARSEPS_HAVE_CUDA
#include "compressors/cuda/cuda_kernels.h"
#endif

namespace py = pybind11;

namespace sparseps::python {
namespace {

// The GPU kernels for a non-empty CUDA tensor (compressors/cuda/cuda_kernels.h), null
// for a CPU or an empty one. They are this module's own, not installed for the registry:
// host compressions in a Python-hosted rank then never ask where their memory lives.
DeviceKernels* kernelsFor(const torch::Tensor& t, const char* fn) {
  if (t.device().is_cpu() || t.numel() == 0) return nullptr;
#if SPARSEPS_HAVE_CUDA
  (void)fn;
  // Made once and kept for the life of the process (no CUDA teardown at exit).
  static DeviceKernels* const kernels = gpu::makeCudaKernels().release();
  return kernels;
#else
  throw py::value_error(std::string(fn) +
                        ": a CUDA tensor, but this build of sparseps has no CUDA kernels (it "
                        "was built without the CUDA toolkit); pass x.cpu()");
#endif
}

torch::Tensor indexTensor(const std::vector<uint32_t>& indices) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(indices.size())}, torch::kInt64);
  int64_t* out = t.data_ptr<int64_t>();
  for (size_t i = 0; i < indices.size(); ++i) out[i] = indices[i];
  return t;
}

torch::Tensor valueTensor(const std::vector<float>& values) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(values.size())}, torch::kFloat32);
  if (!values.empty()) std::memcpy(t.data_ptr<float>(), values.data(), values.size() * 4);
  return t;
}

py::tuple topk(const torch::Tensor& x, double density) {
  auto in = flatInput(x, "topk", /*cuda_too=*/true);
  checkDensity(density, "topk");
  DeviceKernels* gpu = kernelsFor(x, "topk");
  const size_t k = topkCount(in.size(), density);
  std::vector<uint32_t> indices;
  std::vector<float> values;
  absl::Status status;
  {
    py::gil_scoped_release release;
    if (gpu != nullptr) {
      status = gpu->topk(in, k, &indices, &values);
    } else {
      topkExact(in, k, &indices, &values);
    }
  }
  check(status);
  return py::make_tuple(indexTensor(indices), valueTensor(values));
}

py::tuple threshold(const torch::Tensor& x, float thr) {
  auto in = flatInput(x, "threshold", /*cuda_too=*/true);
  if (!std::isfinite(thr)) {  // a NaN would select nothing, silently
    throw py::value_error("threshold: must be a finite number, got " + std::to_string(thr));
  }
  DeviceKernels* gpu = kernelsFor(x, "threshold");
  std::vector<uint32_t> indices;
  std::vector<float> values;
  absl::Status status;
  {
    py::gil_scoped_release release;
    if (gpu != nullptr) {
      status = gpu->threshold(in, thr, &indices, &values);
    } else {
      thresholdFilter(in, thr, &indices, &values);
    }
  }
  check(status);
  return py::make_tuple(indexTensor(indices), valueTensor(values));
}

py::tuple sampledTopk(const torch::Tensor& x, double density, uint64_t seed) {
  auto in = flatInput(x, "sampled_topk", /*cuda_too=*/true);
  checkDensity(density, "sampled_topk");
  DeviceKernels* gpu = kernelsFor(x, "sampled_topk");
  std::vector<uint32_t> indices;
  std::vector<float> values;
  SampledThresholdResult result;
  absl::Status status;
  {
    py::gil_scoped_release release;
    if (gpu != nullptr) {
      const SampledSegment whole{0, in.size(), density, seed, &indices, &values, &result};
      status = gpu->sampledThresholdSegments(in, {&whole, 1}, SampledThresholdOptions());
    } else {
      result = sampledThreshold(in, density, seed, &indices, &values);
    }
  }
  check(status);
  return py::make_tuple(indexTensor(indices), valueTensor(values), result.threshold);
}

py::tuple randomK(const torch::Tensor& x, double density, uint64_t seed) {
  auto in = flatInput(x, "random_k");
  checkDensity(density, "random_k");
  std::vector<uint32_t> indices;
  randomKIndices(in.size(), topkCount(in.size(), density), seed, &indices);
  std::vector<float> values(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) values[i] = in[indices[i]];
  return py::make_tuple(indexTensor(indices), valueTensor(values));
}

}  // namespace

void bindCompress(py::module_& m) {
  m.attr("HAS_CUDA_KERNELS") = SPARSEPS_HAVE_CUDA != 0;
  m.def("topk_count", &topkCount, py::arg("numel"), py::arg("density"),
        "k = max(1, floor(numel * density)): how many elements a density keeps.");
  m.def("topk", &topk, py::arg("x"), py::arg("density"),
        "Exact magnitude top-k, k = topk_count(x.numel(), density): (indices, values), "
        "indices increasing. Ties go to the lower index; NaN ranks above Inf. A CUDA x is "
        "selected on its GPU.");
  m.def("threshold", &threshold, py::arg("x"), py::arg("threshold"),
        "Every element with |x| >= |threshold|: (indices, values). A CUDA x is filtered on "
        "its GPU.");
  m.def("sampled_topk", &sampledTopk, py::arg("x"), py::arg("density"), py::arg("seed") = 0,
        "DGC's sampled threshold: (indices, values, threshold); about k elements, between "
        "0.8k and k. A CUDA x is selected on its GPU, with the same result.");
  m.def("random_k", &randomK, py::arg("x"), py::arg("density"), py::arg("seed") = 0,
        "k distinct uniform positions drawn from seed (reproducible): (indices, values).");
}

}  // namespace sparseps::python

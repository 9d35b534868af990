#include "python/src/compress.h"

#include <torch/python.h>

#include <cstring>
#include <string>
#include <vector>

#include "compressors/random_k.h"
#include "compressors/segment_spec.h"
#include "compressors/threshold.h"
#include "compressors/topk.h"

namespace py = pybind11;

namespace sparseps::python {
namespace {

absl::Span<const float> flatInput(const torch::Tensor& t, const char* fn) {
  if (!t.defined() || t.scalar_type() != torch::kFloat32 || !t.device().is_cpu() ||
      !t.is_contiguous()) {
    throw py::value_error(std::string(fn) + ": needs a contiguous float32 CPU tensor, got " +
                          (t.defined() ? t.toString() : std::string("an undefined tensor")) +
                          " (use .float().contiguous().cpu())");
  }
  if (t.numel() > static_cast<int64_t>(UINT32_MAX)) {
    throw py::value_error(std::string(fn) + ": at most 2^32 - 1 elements per call");
  }
  return {t.data_ptr<float>(), static_cast<size_t>(t.numel())};
}

void checkDensity(double density, const char* fn) {
  if (!(density > 0.0 && density <= 1.0)) {
    throw py::value_error(std::string(fn) + ": density must be in (0, 1], got " +
                          std::to_string(density));
  }
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
  auto in = flatInput(x, "topk");
  checkDensity(density, "topk");
  std::vector<uint32_t> indices;
  std::vector<float> values;
  {
    py::gil_scoped_release release;
    topkExact(in, topkCount(in.size(), density), &indices, &values);
  }
  return py::make_tuple(indexTensor(indices), valueTensor(values));
}

py::tuple threshold(const torch::Tensor& x, float thr) {
  auto in = flatInput(x, "threshold");
  std::vector<uint32_t> indices;
  std::vector<float> values;
  {
    py::gil_scoped_release release;
    thresholdFilter(in, thr, &indices, &values);
  }
  return py::make_tuple(indexTensor(indices), valueTensor(values));
}

py::tuple sampledTopk(const torch::Tensor& x, double density, uint64_t seed) {
  auto in = flatInput(x, "sampled_topk");
  checkDensity(density, "sampled_topk");
  std::vector<uint32_t> indices;
  std::vector<float> values;
  SampledThresholdResult result;
  {
    py::gil_scoped_release release;
    result = sampledThreshold(in, density, seed, &indices, &values);
  }
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
  m.def("topk_count", &topkCount, py::arg("numel"), py::arg("density"),
        "k = max(1, floor(numel * density)): how many elements a density keeps.");
  m.def("topk", &topk, py::arg("x"), py::arg("density"),
        "Exact magnitude top-k, k = topk_count(x.numel(), density): (indices, values), "
        "indices increasing. Ties go to the lower index; NaN ranks above Inf.");
  m.def("threshold", &threshold, py::arg("x"), py::arg("threshold"),
        "Every element with |x| >= |threshold|: (indices, values).");
  m.def("sampled_topk", &sampledTopk, py::arg("x"), py::arg("density"), py::arg("seed") = 0,
        "DGC's sampled threshold: (indices, values, threshold); about k elements, between "
        "0.8k and k.");
  m.def("random_k", &randomK, py::arg("x"), py::arg("density"), py::arg("seed") = 0,
        "k distinct uniform positions drawn from seed (reproducible): (indices, values).");
}

}  // namespace sparseps::python

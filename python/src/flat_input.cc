#include "python/src/flat_input.h"

#include <cstdint>
#include <string>

namespace py = pybind11;

namespace sparseps::python {

absl::Span<const float> flatInput(const torch::Tensor& t, const char* fn, bool cuda_too) {
  const bool device_ok = t.defined() && (t.device().is_cpu() || (cuda_too && t.device().is_cuda()));
  if (!t.defined() || t.scalar_type() != torch::kFloat32 || !device_ok || !t.is_contiguous()) {
    throw py::value_error(std::string(fn) + ": needs a contiguous float32 " +
                          (cuda_too ? "CPU or CUDA" : "CPU") + " tensor, got " +
                          (t.defined() ? t.toString() : std::string("an undefined tensor")) +
                          " (use .float().contiguous()" + (cuda_too ? "" : ".cpu()") + ")");
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

}  // namespace sparseps::python

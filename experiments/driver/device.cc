#include "experiments/driver/device.h"

#include <torch/cuda.h>

#include "absl/strings/str_cat.h"
#include "core/torch/cuda_install.h"
#include "optim/builtin_methods.h"

namespace sparseps {

absl::Status checkDevice(const DriverConfig& c) {
  if (c.device != "cuda") return absl::OkStatus();
  if (c.virtualClock()) {
    return absl::InvalidArgumentError(
        "--device=cuda: a virtual-time job (--clock=virtual) computes on the CPU; drop one "
        "of the two");
  }
  if (!hasCudaKernels()) {
    return absl::FailedPreconditionError(
        "--device=cuda: this build of sparseps has no CUDA kernels (CMake found no CUDA "
        "toolkit); build it with nvcc and a CUDA LibTorch (docs/gpu.md: GPU workers), or use "
        "--device=cpu");
  }
  if (!torch::cuda::is_available()) {
    return absl::FailedPreconditionError(
        "--device=cuda: LibTorch sees no CUDA GPU (no GPU or driver here, or a CPU-only "
        "LibTorch such as Debian's); build against a CUDA LibTorch on a GPU machine (docs/gpu.md: "
        "GPU workers), or use --device=cpu");
  }
  auto method = methodRegistry().find(c.job.method);
  if (!method.ok()) return method.status();
  if (auto s = (*method)->checkDeviceRule(c.job.method_options); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=cuda: ", s.message(), "; use --device=cpu for it"));
  }
  return absl::OkStatus();
}

c10::Device rankDevice(const DriverConfig& c) {
  if (c.device != "cuda" || c.isServer()) return c10::Device(c10::DeviceType::CPU);
  const auto gpus = static_cast<int>(torch::cuda::device_count());
  return c10::Device(c10::DeviceType::CUDA,
                     static_cast<c10::DeviceIndex>(gpus > 0 ? c.workerIndex() % gpus : 0));
}

}  // namespace sparseps

#include "compressors/kernels/device_kernels.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace sparseps {
namespace {

std::unique_ptr<DeviceKernels>& installed() {
  static std::unique_ptr<DeviceKernels> kernels;
  return kernels;
}

}  // namespace

void installDeviceKernels(std::unique_ptr<DeviceKernels> kernels) {
  installed() = std::move(kernels);
}

DeviceKernels* deviceKernelsFor(const void* x) {
  DeviceKernels* kernels = installed().get();
  return kernels != nullptr && x != nullptr && kernels->onDevice(x) ? kernels : nullptr;
}

void requireDeviceOk(const absl::Status& status, absl::string_view what) {
  if (status.ok()) return;
  std::fprintf(stderr, "sparseps fatal: %s on the GPU failed: %s\n", std::string(what).c_str(),
               std::string(status.message()).c_str());
  std::abort();
}

}  // namespace sparseps

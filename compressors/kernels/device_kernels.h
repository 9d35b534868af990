#pragma once
// DeviceKernels: the GPU side of the selection compressors of the registry. When the
// input of `topk`, `threshold` or `sampled` lives in device memory, the compressor runs
// its GPU kernel there (compressors/cuda/: the radix select, the threshold filter, DGC's
// sampled threshold) instead of its CPU loop, with the same result; the selected indices
// and values come back to host vectors, since they are what travels. A build with CUDA
// installs the kernels (compressors/cuda/cuda_kernels.h); without them every input is
// host memory. The other compressors read host memory only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "compressors/kernels/sampled_threshold_types.h"

namespace sparseps {

// One segment of topkSegments: x[offset, offset + n), its k largest magnitudes into
// *indices (within the segment, increasing) and *values, as topk() gives them.
struct TopkSegment {
  size_t offset = 0;
  size_t n = 0;
  size_t k = 0;
  std::vector<uint32_t>* indices = nullptr;
  std::vector<float>* values = nullptr;
};

// One segment of sampledThresholdSegments: x[offset, offset + n) at `density`, its sample's
// start drawn from random_bits; what sampledThreshold() gives into *indices and *values,
// and its report into *result (when not null).
struct SampledSegment {
  size_t offset = 0;
  size_t n = 0;
  double density = 0.0;
  uint64_t random_bits = 0;
  std::vector<uint32_t>* indices = nullptr;
  std::vector<float>* values = nullptr;
  SampledThresholdResult* result = nullptr;
};

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;
  // Whether p points into device (or managed) memory.
  virtual bool onDevice(const void* p) const = 0;
  // The results of topkExact and thresholdFilter, into host vectors.
  virtual absl::Status topk(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
                            std::vector<float>* values) = 0;
  // The top-k of every segment of one flat x at once: a fixed number of launches whatever
  // their number, one copy of all the selected pairs to the host and one wait.
  virtual absl::Status topkSegments(absl::Span<const float> x,
                                    absl::Span<const TopkSegment> segments) = 0;
  virtual absl::Status threshold(absl::Span<const float> x, float thr,
                                 std::vector<uint32_t>* indices, std::vector<float>* values) = 0;
  // DGC's sampled threshold of every segment of one flat x at once: a fixed number of
  // launches and of waits whatever their number, one copy of all the selected pairs.
  virtual absl::Status sampledThresholdSegments(absl::Span<const float> x,
                                                absl::Span<const SampledSegment> segments,
                                                const SampledThresholdOptions& options) = 0;
};

// Installs the process's kernels (nullptr removes them). Not while compressions run.
void installDeviceKernels(std::unique_ptr<DeviceKernels> kernels);

// The installed kernels if x lives on a device, else nullptr (run the CPU loop).
DeviceKernels* deviceKernelsFor(const void* x);

// A device kernel's failure inside compress(), which cannot return it: the process ends
// with the step and the CUDA error named (a device fault has no recovery here).
void requireDeviceOk(const absl::Status& status, absl::string_view what);

}  // namespace sparseps

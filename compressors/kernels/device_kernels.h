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

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;
  // Whether p points into device (or managed) memory.
  virtual bool onDevice(const void* p) const = 0;
  // The results of topkExact, thresholdFilter and sampledThreshold, into host vectors.
  virtual absl::Status topk(absl::Span<const float> x, size_t k, std::vector<uint32_t>* indices,
                            std::vector<float>* values) = 0;
  // The top-k of every segment of one flat x at once: a fixed number of launches whatever
  // their number, one copy of all the selected pairs to the host and one wait.
  virtual absl::Status topkSegments(absl::Span<const float> x,
                                    absl::Span<const TopkSegment> segments) = 0;
  virtual absl::Status threshold(absl::Span<const float> x, float thr,
                                 std::vector<uint32_t>* indices, std::vector<float>* values) = 0;
  virtual absl::StatusOr<SampledThresholdResult> sampledThreshold(
      absl::Span<const float> x, double density, uint64_t random_bits,
      const SampledThresholdOptions& options, std::vector<uint32_t>* indices,
      std::vector<float>* values) = 0;
};

// Installs the process's kernels (nullptr removes them). Not while compressions run.
void installDeviceKernels(std::unique_ptr<DeviceKernels> kernels);

// The installed kernels if x lives on a device, else nullptr (run the CPU loop).
DeviceKernels* deviceKernelsFor(const void* x);

// A device kernel's failure inside compress(), which cannot return it: the process ends
// with the step and the CUDA error named (a device fault has no recovery here).
void requireDeviceOk(const absl::Status& status, absl::string_view what);

}  // namespace sparseps

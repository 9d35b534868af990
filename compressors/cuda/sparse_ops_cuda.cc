#include "compressors/cuda/sparse_ops_cuda.h"

#include "compressors/cuda/cuda_status.h"
#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {

absl::Status scatterAddDevice(const uint32_t* indices, const float* values, size_t count,
                              float scale, float* dst, cudaStream_t stream) {
  if (absl::Status s = checkSegmentSize(count); !s.ok()) return s;
  if (count == 0) return absl::OkStatus();
  return cudaStatus(
      launchScatterAdd(indices, values, static_cast<uint32_t>(count), scale, dst, stream),
      "scatterAddDevice");
}

absl::Status axpyDevice(float a, const float* x, size_t n, float* y, cudaStream_t stream) {
  if (absl::Status s = checkSegmentSize(n); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  return cudaStatus(launchAxpy(a, x, static_cast<uint32_t>(n), y, stream), "axpyDevice");
}

absl::Status packPairsDevice(const uint32_t* indices, const float* values, size_t count,
                             uint32_t* pairs, cudaStream_t stream) {
  if (absl::Status s = checkSegmentSize(count); !s.ok()) return s;
  if (count == 0) return absl::OkStatus();
  return cudaStatus(launchPackPairs(indices, values, static_cast<uint32_t>(count), pairs, stream),
                    "packPairsDevice");
}

}  // namespace sparseps::gpu

// The threshold filter's stable index compaction: cub::DeviceSelect::If over the indices
// 0..n-1, keeping those with magnitudeKey(x[i]) >= keyMin.

#include <thrust/iterator/counting_iterator.h>

#include <cub/device/device_select.cuh>

#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

struct AtLeastOp {
  const float* x;
  uint32_t keyMin;
  __device__ bool operator()(uint32_t i) const { return magnitudeKey(x[i]) >= keyMin; }
};

using Counting = thrust::counting_iterator<uint32_t>;

}  // namespace

size_t selectIndicesTempBytes(uint32_t n) {
  size_t bytes = 0;
  if (cub::DeviceSelect::If(nullptr, bytes, Counting(0), static_cast<uint32_t*>(nullptr),
                            static_cast<uint32_t*>(nullptr), n, AtLeastOp{},
                            cudaStream_t{}) != cudaSuccess) {
    return 0;
  }
  return bytes;
}

cudaError_t launchSelectIndices(const float* x, uint32_t n, uint32_t keyMin, uint32_t* out,
                                uint32_t* count, void* temp, cudaStream_t stream) {
  size_t bytes = selectIndicesTempBytes(n);
  return cub::DeviceSelect::If(temp, bytes, Counting(0), out, count, n, AtLeastOp{x, keyMin},
                               stream);
}

}  // namespace sparseps::gpu

// The one stable index compaction the device kernels share: cub::DeviceSelect::If over
// the indices 0..n-1 with a predicate on magnitudeKey(x[i]). A single instantiation with
// a run-time mode keeps the compile time down (CUB's select is the heaviest template).

#include <thrust/iterator/counting_iterator.h>

#include <cub/device/device_select.cuh>

#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

struct IndexSelectOp {
  const float* x;
  const RadixState* state;
  uint32_t keyMin;
  SelectMode mode;
  __device__ bool operator()(uint32_t i) const {
    const uint32_t key = magnitudeKey(x[i]);
    switch (mode) {
      case SelectMode::kAtLeast:
        return key >= keyMin;
      case SelectMode::kTie:
        return isTie(key, *state);
      default:
        return isSelected(key, i, *state);
    }
  }
};

using Counting = thrust::counting_iterator<uint32_t>;

}  // namespace

size_t selectIndicesTempBytes(uint32_t n) {
  size_t bytes = 0;
  if (cub::DeviceSelect::If(nullptr, bytes, Counting(0), static_cast<uint32_t*>(nullptr),
                            static_cast<uint32_t*>(nullptr), n, IndexSelectOp{},
                            cudaStream_t{}) != cudaSuccess) {
    return 0;
  }
  return bytes;
}

cudaError_t launchSelectIndices(const float* x, uint32_t n, SelectMode mode, uint32_t keyMin,
                                const RadixState* state, uint32_t* out, uint32_t* count, void* temp,
                                cudaStream_t stream) {
  size_t bytes = selectIndicesTempBytes(n);
  return cub::DeviceSelect::If(temp, bytes, Counting(0), out, count, n,
                               IndexSelectOp{x, state, keyMin, mode}, stream);
}

}  // namespace sparseps::gpu

// Baseline magnitude top-k on the device by sorting: cub::DeviceRadixSort sorts the
// magnitude keys (radix_digits.h) descending with their indices (stable, so equal keys
// keep the lower index first), the first k indices are the top-k, and a second sort puts
// them in increasing order.

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>

#include "compressors/cuda/device_scratch.h"
#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

__global__ void makeKeysKernel(const float* __restrict__ x, uint32_t n, uint32_t* keys,
                               uint32_t* indices) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    keys[i] = magnitudeKey(x[i]);
    indices[i] = static_cast<uint32_t>(i);
  }
}

int bitsFor(uint32_t maxValue) {
  int bits = 1;
  while (bits < 32 && (maxValue >> bits) != 0) ++bits;
  return bits;
}

struct SortTemp {
  uint32_t* keys[2];
  uint32_t* indices[2];
  void* cub;
  size_t cubBytes;
  size_t total;
};

cudaError_t layoutSortTemp(uint32_t n, uint32_t k, void* temp, SortTemp* t) {
  size_t pairBytes = 0, keyBytes = 0;
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr), indices(nullptr, nullptr);
  cudaError_t err =
      cub::DeviceRadixSort::SortPairsDescending(nullptr, pairBytes, keys, indices, n, 0, 31);
  if (err != cudaSuccess) return err;
  err = cub::DeviceRadixSort::SortKeys(nullptr, keyBytes, static_cast<const uint32_t*>(nullptr),
                                       static_cast<uint32_t*>(nullptr), k, 0, bitsFor(n - 1));
  if (err != cudaSuccess) return err;
  ScratchCarver carver(temp);
  for (int b = 0; b < 2; ++b) {
    t->keys[b] = carver.take<uint32_t>(n);
    t->indices[b] = carver.take<uint32_t>(n);
  }
  t->cubBytes = pairBytes > keyBytes ? pairBytes : keyBytes;
  t->cub = carver.take<char>(t->cubBytes);
  t->total = carver.used();
  return cudaSuccess;
}

}  // namespace

size_t topkSortTempBytes(uint32_t n, uint32_t k) {
  SortTemp t{};
  return layoutSortTemp(n, k, nullptr, &t) == cudaSuccess ? t.total : 0;
}

cudaError_t launchTopkSort(const float* x, uint32_t n, uint32_t k, uint32_t* indices, float* values,
                           void* temp, cudaStream_t stream) {
  SortTemp t{};
  cudaError_t err = layoutSortTemp(n, k, temp, &t);
  if (err != cudaSuccess) return err;
  const uint32_t blocks = std::min((n + 255) / 256, 4096u);
  makeKeysKernel<<<blocks, 256, 0, stream>>>(x, n, t.keys[0], t.indices[0]);
  cub::DoubleBuffer<uint32_t> keys(t.keys[0], t.keys[1]);
  cub::DoubleBuffer<uint32_t> order(t.indices[0], t.indices[1]);
  size_t bytes = t.cubBytes;
  err = cub::DeviceRadixSort::SortPairsDescending(t.cub, bytes, keys, order, n, 0, 31, stream);
  if (err != cudaSuccess) return err;
  bytes = t.cubBytes;
  err = cub::DeviceRadixSort::SortKeys(t.cub, bytes, static_cast<const uint32_t*>(order.Current()),
                                       indices, k, 0, bitsFor(n - 1), stream);
  if (err != cudaSuccess) return err;
  return launchGather(x, indices, k, values, stream);
}

}  // namespace sparseps::gpu

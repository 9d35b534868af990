// Element-wise device kernels around selection: gather, the threshold filter
// (keep |x| >= |thr| in magnitudeKey order, via select_indices.cu), scatter-add and axpy
// for applying updates, and packing into u32 index + f32 value pairs.

#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

constexpr uint32_t kThreads = 256;
constexpr uint32_t kMaxBlocks = 4096;

uint32_t blocksFor(uint32_t n) {
  uint32_t blocks = (n + kThreads - 1) / kThreads;
  return blocks == 0 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks);
}

// size_t, so the last stride cannot wrap around for n close to 2^32.
#define SPARSEPS_GRID_STRIDE(i, n)                                                     \
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<size_t>(gridDim.x) * blockDim.x)

__global__ void gatherKernel(const float* __restrict__ x, const uint32_t* __restrict__ indices,
                             uint32_t count, float* values) {
  SPARSEPS_GRID_STRIDE(j, count) values[j] = x[indices[j]];
}

// As gatherKernel, with the count known only on the device.
__global__ void gatherCountedKernel(const float* __restrict__ x,
                                    const uint32_t* __restrict__ indices, const uint32_t* count,
                                    uint32_t capacity, float* values) {
  const uint32_t c = *count;
  SPARSEPS_GRID_STRIDE(j, c < capacity ? c : capacity) values[j] = x[indices[j]];
}

// Indices are unique (SegmentData's contract), so no two threads write one element.
__global__ void scatterAddKernel(const uint32_t* __restrict__ indices,
                                 const float* __restrict__ values, uint32_t count, float alpha,
                                 float* y) {
  SPARSEPS_GRID_STRIDE(j, count) y[indices[j]] += alpha * values[j];
}

__global__ void axpyKernel(float alpha, const float* __restrict__ x, uint32_t n, float* y) {
  SPARSEPS_GRID_STRIDE(i, n) y[i] += alpha * x[i];
}

__global__ void packPairsKernel(const uint32_t* __restrict__ indices,
                                const float* __restrict__ values, uint32_t count, uint2* pairs) {
  SPARSEPS_GRID_STRIDE(j, count) pairs[j] = make_uint2(indices[j], __float_as_uint(values[j]));
}

}  // namespace

cudaError_t launchGather(const float* x, const uint32_t* indices, uint32_t count, float* values,
                         cudaStream_t stream) {
  gatherKernel<<<blocksFor(count), kThreads, 0, stream>>>(x, indices, count, values);
  return cudaGetLastError();
}

size_t thresholdFilterTempBytes(uint32_t n) { return selectIndicesTempBytes(n); }

cudaError_t launchThresholdFilter(const float* x, uint32_t n, float thr, uint32_t* indices,
                                  float* values, uint32_t* count, void* temp, cudaStream_t stream) {
  cudaError_t err = launchSelectIndices(x, n, magnitudeKey(thr), indices, count, temp, stream);
  if (err != cudaSuccess) return err;
  gatherCountedKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, indices, count, n, values);
  return cudaGetLastError();
}

cudaError_t launchScatterAdd(const uint32_t* indices, const float* values, uint32_t count,
                             float alpha, float* y, cudaStream_t stream) {
  scatterAddKernel<<<blocksFor(count), kThreads, 0, stream>>>(indices, values, count, alpha, y);
  return cudaGetLastError();
}

cudaError_t launchAxpy(float alpha, const float* x, uint32_t n, float* y, cudaStream_t stream) {
  axpyKernel<<<blocksFor(n), kThreads, 0, stream>>>(alpha, x, n, y);
  return cudaGetLastError();
}

cudaError_t launchPackPairs(const uint32_t* indices, const float* values, uint32_t count,
                            uint32_t* pairs, cudaStream_t stream) {
  packPairsKernel<<<blocksFor(count), kThreads, 0, stream>>>(indices, values, count,
                                                             reinterpret_cast<uint2*>(pairs));
  return cudaGetLastError();
}

}  // namespace sparseps::gpu

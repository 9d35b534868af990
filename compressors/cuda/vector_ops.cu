// The element-wise kernels of VectorOps (compressors/vector_ops.h) on a GPU: the worker
// rules' folds, momentum and residual updates, and the sparse writes at indices.

#include "compressors/cuda/block_plan.h"
#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

constexpr uint32_t kThreads = 256;
constexpr uint32_t kMaxBlocks = 4096;

uint32_t blocksFor(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return blocks == 0 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : static_cast<uint32_t>(blocks));
}

#define SPARSEPS_GRID_STRIDE(i, n)                                                     \
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<size_t>(gridDim.x) * blockDim.x)

// y = a * y + b * (g + wd * w); with fold, y = b * (g + wd * w) (y is not read).
__global__ void accumulateKernel(float* y, float a, float b, const float* g, const float* w,
                                 float wd, size_t n, bool fold) {
  SPARSEPS_GRID_STRIDE(j, n) {
    const float folded = b * (g[j] + wd * w[j]);
    y[j] = fold ? folded : a * y[j] + folded;
  }
}

__global__ void combineKernel(float* out, float a, const float* x, float b, const float* z,
                              size_t n) {
  SPARSEPS_GRID_STRIDE(j, n) out[j] = a * x[j] + b * z[j];
}

__global__ void scaleKernel(float* y, float a, size_t n) { SPARSEPS_GRID_STRIDE(j, n) y[j] *= a; }

// Adds this block's share of sum (g + wd * w)^2 to *sum.
__global__ void sumSquaresKernel(const float* g, const float* w, float wd, size_t n, double* sum) {
  __shared__ double partial[kThreads];
  double own = 0.0;
  SPARSEPS_GRID_STRIDE(j, n) {
    const double x = g[j] + wd * w[j];
    own += x * x;
  }
  partial[threadIdx.x] = own;
  __syncthreads();
  for (uint32_t half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}

// Indices are distinct (SegmentData's contract), so no two threads write one element.
__global__ void scaleAtKernel(float* y, const uint32_t* idx, uint32_t count, float a) {
  SPARSEPS_GRID_STRIDE(t, count) y[idx[t]] *= a;
}

__global__ void fillAtKernel(float* y, const uint32_t* idx, uint32_t count, float value) {
  SPARSEPS_GRID_STRIDE(t, count) y[idx[t]] = value;
}

__global__ void setAtKernel(float* y, const uint32_t* idx, const float* values, uint32_t count) {
  SPARSEPS_GRID_STRIDE(t, count) y[idx[t]] = values[t];
}

// Each block works on the update whose run holds it (block_plan.h), striding over that span
// with the update's other blocks.
__global__ void spanUpdatesKernel(const SpanUpdate* updates, uint32_t count, float a, float wd) {
  const SpanUpdate u = updates[entryOfBlock(updates, count, blockIdx.x)];
  const size_t stride = static_cast<size_t>(u.blocks) * blockDim.x;
  for (size_t j = static_cast<size_t>(blockIdx.x - u.firstBlock) * blockDim.x + threadIdx.x;
       j < u.n; j += stride) {
    const float g = wd == 0.0f ? u.g[j] : u.g[j] + wd * u.w[j];
    u.y[j] = a == 0.0f ? u.b * g : a * u.y[j] + u.b * g;
  }
}

}  // namespace

cudaError_t launchAccumulate(float* y, float a, float b, const float* g, const float* w, float wd,
                             size_t n, bool fold, cudaStream_t stream) {
  accumulateKernel<<<blocksFor(n), kThreads, 0, stream>>>(y, a, b, g, w, wd, n, fold);
  return cudaGetLastError();
}

cudaError_t launchCombine(float* out, float a, const float* x, float b, const float* z, size_t n,
                          cudaStream_t stream) {
  combineKernel<<<blocksFor(n), kThreads, 0, stream>>>(out, a, x, b, z, n);
  return cudaGetLastError();
}

cudaError_t launchScale(float* y, float a, size_t n, cudaStream_t stream) {
  scaleKernel<<<blocksFor(n), kThreads, 0, stream>>>(y, a, n);
  return cudaGetLastError();
}

cudaError_t launchSumSquares(const float* g, const float* w, float wd, size_t n, double* sum,
                             cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(sum, 0, sizeof(double), stream);
  if (err != cudaSuccess) return err;
  sumSquaresKernel<<<blocksFor(n), kThreads, 0, stream>>>(g, w, wd, n, sum);
  return cudaGetLastError();
}

cudaError_t launchScaleAt(float* y, const uint32_t* idx, uint32_t count, float a,
                          cudaStream_t stream) {
  scaleAtKernel<<<blocksFor(count), kThreads, 0, stream>>>(y, idx, count, a);
  return cudaGetLastError();
}

cudaError_t launchFillAt(float* y, const uint32_t* idx, uint32_t count, float value,
                         cudaStream_t stream) {
  fillAtKernel<<<blocksFor(count), kThreads, 0, stream>>>(y, idx, count, value);
  return cudaGetLastError();
}

cudaError_t launchSpanUpdates(const SpanUpdate* updates, uint32_t count, uint32_t blocks, float a,
                              float wd, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  spanUpdatesKernel<<<blocks, kBlockThreads, 0, stream>>>(updates, count, a, wd);
  return cudaGetLastError();
}

cudaError_t launchSetAt(float* y, const uint32_t* idx, const float* values, uint32_t count,
                        cudaStream_t stream) {
  setAtKernel<<<blocksFor(count), kThreads, 0, stream>>>(y, idx, values, count);
  return cudaGetLastError();
}

}  // namespace sparseps::gpu

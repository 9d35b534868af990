#pragma once
// SPARSEPS_HD marks a function that the CUDA kernels and their host simulations and tests
// share: __host__ __device__ under nvcc, a plain inline function elsewhere.

#if defined(__CUDACC__)
#define SPARSEPS_HD __host__ __device__ __forceinline__
#else
#define SPARSEPS_HD inline
#endif

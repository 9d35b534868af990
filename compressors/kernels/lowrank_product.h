#pragma once
// The BLAS products of low-rank compression (PowerSGD): one GEMM each, through CBLAS
// (Debian's libblas.so.3, which install-deps points at OpenBLAS). Matrices are row-major.

#include <cstddef>

namespace sparseps {

// dst (rows x cols) += scale * P Q^T, with P rows x rank and Q cols x rank.
void addLowRankProduct(const float* P, const float* Q, size_t rows, size_t cols, size_t rank,
                       float scale, float* dst);

// P (rows x rank) = M Q, with M rows x cols and Q cols x rank.
void multiplyRight(const float* M, const float* Q, size_t rows, size_t cols, size_t rank, float* P);

// Q (cols x rank) = M^T P, with M rows x cols and P rows x rank.
void multiplyTransposed(const float* M, const float* P, size_t rows, size_t cols, size_t rank,
                        float* Q);

}  // namespace sparseps

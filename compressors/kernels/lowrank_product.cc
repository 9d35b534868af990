#include "compressors/kernels/lowrank_product.h"

#include <cblas.h>

namespace sparseps {

void addLowRankProduct(const float* P, const float* Q, size_t rows, size_t cols, size_t rank,
                       float scale, float* dst) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
              static_cast<int>(cols), static_cast<int>(rank), scale, P, static_cast<int>(rank), Q,
              static_cast<int>(rank), 1.0f, dst, static_cast<int>(cols));
}

void multiplyRight(const float* M, const float* Q, size_t rows, size_t cols, size_t rank, float* P) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
              static_cast<int>(rank), static_cast<int>(cols), 1.0f, M, static_cast<int>(cols), Q,
              static_cast<int>(rank), 0.0f, P, static_cast<int>(rank));
}

void multiplyTransposed(const float* M, const float* P, size_t rows, size_t cols, size_t rank,
                        float* Q) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(cols),
              static_cast<int>(rank), static_cast<int>(rows), 1.0f, M, static_cast<int>(cols), P,
              static_cast<int>(rank), 0.0f, Q, static_cast<int>(rank));
}

}  // namespace sparseps

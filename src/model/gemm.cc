#include "model/gemm.h"

#include <cblas.h>

namespace zerodp::model {

void gemm(Trans trans_a, Trans trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, const float* b, float beta, float* c) {
  // Stored row-major: A is m x k (or k x m when transposed), B is k x n (or n x k).
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  gemm(trans_a, trans_b, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, c, n);
}

void gemm(Trans trans_a, Trans trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc) {
  if (m == 0 || n == 0) return;
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void set_blas_threads(int threads) {
  openblas_set_num_threads(threads);
}
int blas_threads() {
  return openblas_get_num_threads();
}

}  // namespace zerodp::model

#include "model/gemm.h"

#include <cblas.h>

namespace zerodp::model {

void gemm(Trans trans_a, Trans trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  // Stored row-major: A is m x k (or k x m when transposed), B is k x n (or n x k).
  const int lda = static_cast<int>(ta ? m : k);
  const int ldb = static_cast<int>(tb ? k : n);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, lda, b, ldb,
              beta, c, static_cast<int>(n));
}

void set_blas_threads(int threads) { openblas_set_num_threads(threads); }
int blas_threads() { return openblas_get_num_threads(); }

}  // namespace zerodp::model

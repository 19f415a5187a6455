// Matrix products for the models, through OpenBLAS. Row-major, fp32.
//
// C[m x n] = alpha * op(A) * op(B) + beta * C, where op(X) is X or its transpose. Shapes are
// the shapes of op(A) [m x k] and op(B) [k x n]; leading dimensions are those of the stored,
// untransposed row-major matrices. beta = 1 accumulates, which is how backward adds gradients.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zerodp::model {

enum class Trans { no, yes };

void gemm(Trans trans_a, Trans trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, const float* b, float beta, float* c);

// The same with explicit leading dimensions (row strides, in elements) of the stored A, B and
// C: for sub-matrices of a wider row, e.g. one attention head's columns of [T, 3C].
void gemm(Trans trans_a, Trans trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc);

// OpenBLAS threads, process-wide. With several ranks as threads of one process, set 1:
// two thread pools on two cores spin against each other, and concurrent calls queue.
void set_blas_threads(int threads);
int blas_threads();
// OpenBLAS's name for the kernels it chose ("Zen", "Haswell", "SkylakeX", ...): what
// OPENBLAS_CORETYPE selected, or what it detected.
const char* blas_core_name();

// Time spent in gemm(), for benchmarks. Off by default: gemm() then reads no clock. When on,
// the calls of every thread are added up: calls, 2 m n k flops each, and the seconds they
// took on the chosen clock (thread_cpu: the calling thread's CPU time, to which helper
// OpenBLAS threads add nothing).
enum class GemmClock { off, wall, thread_cpu };
void set_gemm_clock(GemmClock clock);
struct GemmStats {
  std::uint64_t calls = 0;
  double flops = 0.0;
  double seconds = 0.0;
};
GemmStats gemm_stats();  // totals of the process since it started

}  // namespace zerodp::model

// Matrix products for the models, through OpenBLAS. Row-major, fp32 in and out.
//
// C[m x n] = alpha * op(A) * op(B) + beta * C, where op(X) is X or its transpose. Shapes are
// the shapes of op(A) [m x k] and op(B) [k x n]; leading dimensions are those of the stored,
// untransposed row-major matrices. beta = 1 accumulates, which is how backward adds gradients.
//
// Compute (the type the products multiply in):
//  - fp32: cblas_sgemm on the operands as they are.
//  - bf16: each element of A and B is first rounded to the nearest bf16 (ties to even), then
//    the products are summed in fp32: bf16 inputs, fp32 accumulation, as a CPU's bf16 dot
//    instructions and PyTorch's bf16 autocast compute. A product of two bf16 values has at
//    most 16 significant bits, so it is exact in fp32, and only the inputs' rounding (unit
//    roundoff 2^-8 each) and the fp32 sum round. This kernel rounds the operands into the
//    caller's scratch and sums with sgemm: the same numbers on every CPU, but slower than fp32
//    (it adds a pass over both operands). It is the reference a native bf16 kernel is held to.
// The same arguments give the same bits on one machine, every call, in either compute.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace zerodp::model {

enum class Trans { no, yes };

enum class Compute { fp32, bf16 };
std::string_view compute_name(Compute compute);  // "fp32", "bf16"

// How one caller's products are computed: the compute and, for bf16, the scratch the operands
// are rounded into, at least stored(A) + stored(B) floats of the largest product (m k + k n).
// A scratch is one thread's: two threads computing at once need two.
struct GemmCompute {
  Compute compute = Compute::fp32;
  std::span<float> scratch{};
};

// Whether this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX-BF16, from CPUID).
bool cpu_has_native_bf16();

// The product in `how.compute`. bf16: ZERODP_CHECK that the scratch holds both operands.
void gemm(const GemmCompute& how, Trans trans_a, Trans trans_b, std::size_t m, std::size_t n,
          std::size_t k, float alpha, const float* a, std::size_t lda, const float* b,
          std::size_t ldb, float beta, float* c, std::size_t ldc);
void gemm(const GemmCompute& how, Trans trans_a, Trans trans_b, std::size_t m, std::size_t n,
          std::size_t k, float alpha, const float* a, const float* b, float beta, float* c);

// fp32 products (GemmCompute{}):

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
// took on the chosen clock, bf16's rounding of the operands included (thread_cpu: the calling
// thread's CPU time, to which helper OpenBLAS threads add nothing).
enum class GemmClock { off, wall, thread_cpu };
void set_gemm_clock(GemmClock clock);
struct GemmStats {
  std::uint64_t calls = 0;
  double flops = 0.0;
  double seconds = 0.0;
};
GemmStats gemm_stats();  // totals of the process since it started

}  // namespace zerodp::model

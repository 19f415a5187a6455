// Matrix products for the models. Row-major, fp32 in and out.
//
// C[m x n] = alpha * op(A) * op(B) + beta * C, where op(X) is X or its transpose. Shapes are
// the shapes of op(A) [m x k] and op(B) [k x n]; leading dimensions are those of the stored,
// untransposed row-major matrices. beta = 1 accumulates, which is how backward adds gradients.
//
// Compute (the type the products multiply in):
//  - fp32: the operands as they are.
//  - bf16: each element of A and B is first rounded to the nearest bf16 (ties to even), then
//    the products are summed in fp32: bf16 inputs, fp32 accumulation, as a CPU's bf16 dot
//    instructions and PyTorch's bf16 autocast compute. A product of two bf16 values has at
//    most 16 significant bits, so it is exact in fp32, and only the inputs' rounding (unit
//    roundoff 2^-8 each) and the fp32 sum round.
// Kernel (the library that multiplies):
//  - openblas: cblas_sgemm. In bf16 it rounds the operands into the caller's scratch and sums
//    with sgemm: bf16 emulated, the same numbers on every CPU up to the sum's order, slower
//    than fp32 (a pass over both operands more). It is the reference the others are held to.
//  - onednn: oneDNN's matmul primitive (the CPU kernels PyTorch runs), created once per shape
//    and cached for the process. In bf16 it rounds the operands into the scratch as bf16
//    (2 bytes each) and multiplies them with the CPU's bf16 dot instructions: native bf16.
//    The working memory oneDNN declares for a product (its scratchpad, e.g. B copied into
//    the layout its dot instructions read) is taken from the scratch too. Like OpenBLAS's
//    per-thread packing buffers, what a library allocates inside itself and keeps across
//    calls is its own, outside the caller's count (docs/memory.md).
// The same arguments give the same bits on one machine, every call, in every compute and
// kernel, from any number of threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace zerodp::model {

enum class Trans { no, yes };

enum class Compute { fp32, bf16 };
std::string_view compute_name(Compute compute);  // "fp32", "bf16"

enum class GemmKernel { openblas, onednn };
std::string_view gemm_kernel_name(GemmKernel kernel);  // "OpenBLAS", "oneDNN"

// How one caller's products are computed: the compute, the kernel, and the scratch the kernel
// works in, at least gemm_scratch_floats() of the caller's largest product. A scratch is one
// thread's: two threads computing at once need two.
struct GemmCompute {
  Compute compute = Compute::fp32;
  std::span<float> scratch{};
  GemmKernel kernel = GemmKernel::openblas;
};

// Whether this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX-BF16, from CPUID).
bool cpu_has_native_bf16();

// Whether `kernel` computes in `compute` in this build on this CPU: openblas always; onednn
// when zerodp was built with oneDNN and oneDNN has a matmul for it here (bf16: a CPU with
// AVX-512, which oneDNN 2.6 requires for bf16 even where it is not native).
bool gemm_kernel_available(GemmKernel kernel, Compute compute);

// The kernel the GPT's bf16 products run on: onednn where the CPU multiplies bf16 natively
// and oneDNN has the kernel, openblas (emulated) elsewhere. Decided once per process.
GemmKernel bf16_kernel();

// Floats of scratch the product needs in `compute` on `kernel`: openblas, fp32 none, bf16
// stored(A) + stored(B); onednn, its operands in bf16 (2 bytes an element, each operand
// 64-byte aligned; none in fp32) and oneDNN's own working memory for this shape.
std::size_t gemm_scratch_floats(GemmKernel kernel, Compute compute, Trans trans_a, Trans trans_b,
                                std::size_t m, std::size_t n, std::size_t k, float alpha,
                                std::size_t lda, std::size_t ldb, float beta, std::size_t ldc);

// Whether a product may take its left operand's rounding from the product before it.
//  - none: A is rounded into the scratch, as always.
//  - a: the caller declares that the stored A (the same pointer, rows, columns and row stride,
//    whatever trans_a) is the stored A of the previous product on this scratch, from this
//    thread, unchanged since. In bf16 its rounding, at the front of the scratch, is used again
//    instead of being redone; where the previous product left none (fp32, another kernel, an
//    empty product), A is rounded as usual. The same bits either way: it saves the pass only.
//    (A layer's backward reads its output gradient twice, as dout W and as dout^T inp.)
enum class Reuse { none, a };

// The product in `how.compute` on `how.kernel`. ZERODP_CHECK that the kernel is available. A
// product oneDNN needs more scratch for than `how.scratch` holds runs on OpenBLAS instead (in
// bf16 the emulation: the same bf16 inputs and fp32 sums, in another order, and the same for
// the same arguments every call); ZERODP_CHECK that the scratch holds what that needs. The
// GPT sizes its scratch for the emulation (GptConfig::gemm_scratch_floats), so a scratchpad
// of oneDNN's larger than expected costs speed, never the run.
void gemm(const GemmCompute& how, Trans trans_a, Trans trans_b, std::size_t m, std::size_t n,
          std::size_t k, float alpha, const float* a, std::size_t lda, const float* b,
          std::size_t ldb, float beta, float* c, std::size_t ldc, Reuse reuse = Reuse::none);
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

// The threads one product runs on, process-wide: OpenBLAS's, and oneDNN's (each call sets its
// calling thread's OpenMP threads to this). With several ranks as threads of one process, set
// 1: two thread pools on two cores spin against each other, and concurrent calls queue.
void set_blas_threads(int threads);
int blas_threads();
// OpenBLAS's name for the kernels it chose ("Zen", "Haswell", "SkylakeX", ...): what
// OPENBLAS_CORETYPE selected, or what it detected.
const char* blas_core_name();

// Time spent in gemm(), for benchmarks. Off by default: gemm() then reads no clock. When on,
// the calls of every thread are added up: calls, 2 m n k flops each, and the seconds they
// took on the chosen clock, bf16's rounding of the operands included (thread_cpu: the calling
// thread's CPU time, to which helper OpenBLAS or OpenMP threads add nothing).
enum class GemmClock { off, wall, thread_cpu };
void set_gemm_clock(GemmClock clock);
struct GemmStats {
  std::uint64_t calls = 0;
  double flops = 0.0;
  double seconds = 0.0;
  double convert_seconds = 0.0;  // of `seconds`, rounding bf16's operands (0 in fp32)
};
GemmStats gemm_stats();  // totals of the process since it started

}  // namespace zerodp::model

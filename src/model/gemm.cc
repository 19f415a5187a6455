#include "zerodp/model/gemm.h"

#include <cblas.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <semaphore>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "model/gemm_clock.h"
#include "model/onednn_matmul.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"

namespace zerodp::model {
namespace {

std::atomic<GemmClock> g_clock{GemmClock::off};
std::atomic<std::uint64_t> g_calls{0};
std::atomic<double> g_flops{0.0}, g_seconds{0.0}, g_convert_seconds{0.0};

// How many threads may be inside OpenBLAS at once. OpenBLAS keeps each calling thread's
// working buffer in a table of 2 x MAX_THREADS entries (its build's limit, 64 in Debian's
// 0.3.21: 128 entries); past it, it grows an auxiliary table, and in 0.3.21 that growth races
// with other threads' frees: with 1024 thread ranks a free wrote into a table already moved and
// the process died of SIGSEGV (in blas_memory_free). So callers past half of MAX_THREADS wait,
// leaving the other half of the table to OpenBLAS's own threads. Two cores gain nothing from
// more than a few concurrent products anyway.
std::counting_semaphore<>& sgemm_callers() {
  static std::counting_semaphore<> callers([] {
    const char* config = openblas_get_config();
    const char* at = config ? std::strstr(config, "MAX_THREADS=") : nullptr;
    const long max_threads = at ? std::strtol(at + std::strlen("MAX_THREADS="), nullptr, 10) : 0;
    return static_cast<std::ptrdiff_t>(std::clamp(max_threads / 2, 1L, 1024L));
  }());
  return callers;
}

void sgemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha,
           const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
           std::size_t ldc) {
  std::counting_semaphore<>& callers = sgemm_callers();
  callers.acquire();
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  callers.release();
}

// rows x cols of a stored matrix (row stride ld) into `to`, packed, each rounded to bf16.
void round_to_bf16(float* to, const float* from, std::size_t rows, std::size_t cols,
                   std::size_t ld) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = from + r * ld;
    float* out = to + r * cols;
    for (std::size_t i = 0; i < cols; ++i) out[i] = bf16_to_float(float_to_bf16(row[i]));
  }
}

// What the front of a scratch holds: the left operand the calling thread's last bf16 product
// on it rounded there, and in which form (Reuse::a). Kept per thread, as a scratch is one
// thread's; any product on the scratch rewrites its front, so each product sets it anew.
enum class Rounded { none, fp32_values, bf16_packed };
struct FrontOfScratch {
  const float* scratch = nullptr;
  const float* a = nullptr;
  std::size_t rows = 0, cols = 0, ld = 0;
  Rounded form = Rounded::none;
  bool holds(const float* s, const float* x, std::size_t r, std::size_t c, std::size_t l,
             Rounded f) const {
    return form == f && scratch == s && a == x && rows == r && cols == c && ld == l;
  }
};
thread_local FrontOfScratch t_front;

void count(GemmClock clock, double t0, double convert_seconds, std::size_t m, std::size_t n,
           std::size_t k) {
  if (clock != GemmClock::off) {
    g_convert_seconds.fetch_add(convert_seconds, std::memory_order_relaxed);
    const double seconds = clock_seconds(clock) - t0;
    g_calls.fetch_add(1, std::memory_order_relaxed);
    g_flops.fetch_add(
        2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
        std::memory_order_relaxed);
    g_seconds.fetch_add(seconds, std::memory_order_relaxed);
  }
}

}  // namespace

std::string_view compute_name(Compute compute) {
  return compute == Compute::bf16 ? "bf16" : "fp32";
}

std::string_view gemm_kernel_name(GemmKernel kernel) {
  return kernel == GemmKernel::onednn ? "oneDNN" : "OpenBLAS";
}

bool gemm_kernel_available(GemmKernel kernel, Compute compute) {
  return kernel == GemmKernel::openblas || onednn::available(compute);
}

GemmKernel bf16_kernel() {
  static const GemmKernel kernel = cpu_has_native_bf16() && onednn::available(Compute::bf16)
                                       ? GemmKernel::onednn
                                       : GemmKernel::openblas;
  return kernel;
}

std::size_t gemm_scratch_floats(GemmKernel kernel, Compute compute, Trans trans_a, Trans trans_b,
                                std::size_t m, std::size_t n, std::size_t k, float alpha,
                                std::size_t lda, std::size_t ldb, float beta, std::size_t ldc) {
  if (m == 0 || n == 0) return 0;
  if (kernel == GemmKernel::onednn) {
    const std::size_t bytes = onednn::scratch_bytes(
        compute, trans_a == Trans::yes, trans_b == Trans::yes, m, n, k, alpha, lda, ldb, beta, ldc);
    return (bytes + sizeof(float) - 1) / sizeof(float);
  }
  return compute == Compute::bf16 ? m * k + k * n : 0;
}

bool cpu_has_native_bf16() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool amx_bf16 = (edx >> 22) & 1u;
  const unsigned max_subleaf = eax;
  bool avx512_bf16 = false;
  if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
    avx512_bf16 = (eax >> 5) & 1u;
  }
  return avx512_bf16 || amx_bf16;
#else
  return false;
#endif
}

void gemm(Trans trans_a, Trans trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, const float* b, float beta, float* c) {
  gemm(GemmCompute{}, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
}

void gemm(Trans trans_a, Trans trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc) {
  gemm(GemmCompute{}, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(const GemmCompute& how, Trans trans_a, Trans trans_b, std::size_t m, std::size_t n,
          std::size_t k, float alpha, const float* a, const float* b, float beta, float* c) {
  // Stored row-major: A is m x k (or k x m when transposed), B is k x n (or n x k).
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  gemm(how, trans_a, trans_b, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, c, n);
}

void gemm(const GemmCompute& how, Trans trans_a, Trans trans_b, std::size_t m, std::size_t n,
          std::size_t k, float alpha, const float* a, std::size_t lda, const float* b,
          std::size_t ldb, float beta, float* c, std::size_t ldc, Reuse reuse) {
  if (m == 0 || n == 0) return;
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  const GemmClock clock = g_clock.load(std::memory_order_relaxed);
  const double t0 = clock == GemmClock::off ? 0.0 : clock_seconds(clock);
  double convert_seconds = 0.0;
  // The stored matrices: A is a_rows x a_cols, B is b_rows x b_cols.
  const std::size_t a_rows = ta ? k : m, a_cols = ta ? m : k;
  const std::size_t b_rows = tb ? n : k, b_cols = tb ? k : n;
  const float* front = how.scratch.data();
  auto has_front = [&](Rounded form) {
    return reuse == Reuse::a && t_front.holds(front, a, a_rows, a_cols, lda, form);
  };
  // OpenBLAS (below) runs a product of no terms (k = 0: C = beta C) and one oneDNN needs more
  // scratch for than the caller has.
  const std::optional<double> native =
      how.kernel == GemmKernel::onednn && k > 0
          ? onednn::matmul(how.compute, how.scratch, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta,
                           c, ldc, clock, has_front(Rounded::bf16_packed))
          : std::nullopt;
  if (native) {
    convert_seconds = *native;
    t_front = how.compute == Compute::bf16
                  ? FrontOfScratch{front, a, a_rows, a_cols, lda, Rounded::bf16_packed}
                  : FrontOfScratch{};
  } else if (how.compute == Compute::fp32) {
    sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    ZERODP_CHECK_MSG(a_rows * a_cols + b_rows * b_cols <= how.scratch.size(),
                     "gemm: the bf16 scratch is smaller than the operands");
    float* a16 = how.scratch.data();
    float* b16 = a16 + a_rows * a_cols;
    if (!has_front(Rounded::fp32_values)) round_to_bf16(a16, a, a_rows, a_cols, lda);
    round_to_bf16(b16, b, b_rows, b_cols, ldb);
    t_front = {front, a, a_rows, a_cols, lda, Rounded::fp32_values};
    if (clock != GemmClock::off) convert_seconds = clock_seconds(clock) - t0;
    // OpenBLAS wants a row stride of at least 1, also of an empty matrix.
    sgemm(ta, tb, m, n, k, alpha, a16, std::max<std::size_t>(a_cols, 1), b16,
          std::max<std::size_t>(b_cols, 1), beta, c, ldc);
  }
  count(clock, t0, convert_seconds, m, n, k);
}

void set_blas_threads(int threads) {
  openblas_set_num_threads(threads);
}
int blas_threads() {
  return openblas_get_num_threads();
}
const char* blas_core_name() {
  return openblas_get_corename();
}

void set_gemm_clock(GemmClock clock) {
  g_clock.store(clock, std::memory_order_relaxed);
}
GemmStats gemm_stats() {
  return {g_calls.load(std::memory_order_relaxed), g_flops.load(std::memory_order_relaxed),
          g_seconds.load(std::memory_order_relaxed),
          g_convert_seconds.load(std::memory_order_relaxed)};
}

}  // namespace zerodp::model

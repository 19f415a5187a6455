#include "zerodp/model/gemm.h"

#include <cblas.h>
#include <time.h>

#include <atomic>
#include <chrono>

namespace zerodp::model {
namespace {

std::atomic<GemmClock> g_clock{GemmClock::off};
std::atomic<std::uint64_t> g_calls{0};
std::atomic<double> g_flops{0.0}, g_seconds{0.0};

double clock_seconds(GemmClock clock) {
  if (clock == GemmClock::wall) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

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
  const GemmClock clock = g_clock.load(std::memory_order_relaxed);
  const double t0 = clock == GemmClock::off ? 0.0 : clock_seconds(clock);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  if (clock != GemmClock::off) {
    const double seconds = clock_seconds(clock) - t0;
    g_calls.fetch_add(1, std::memory_order_relaxed);
    g_flops.fetch_add(
        2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
        std::memory_order_relaxed);
    g_seconds.fetch_add(seconds, std::memory_order_relaxed);
  }
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
          g_seconds.load(std::memory_order_relaxed)};
}

}  // namespace zerodp::model

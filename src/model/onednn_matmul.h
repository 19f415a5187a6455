// gemm()'s oneDNN kernel (zerodp/model/gemm.h, GemmKernel::onednn): oneDNN's matmul
// primitive, created once per shape, compute, alpha, beta and thread count and kept for the
// process. Built where zerodp is configured with oneDNN (ZERODP_HAVE_ONEDNN); elsewhere
// available() is false and the rest is never called.
//
// Memory: in bf16 the operands are rounded into the caller's scratch, packed, 2 bytes an
// element, each at a 64-byte boundary; the working memory oneDNN declares for the product
// (its "scratchpad", user mode) follows them, in the same scratch. (oneDNN's gemm-based
// kernels, its fp32 "gemm:jit" among them, declare none and pack in buffers of their own, as
// OpenBLAS does.)
// Threads: each call sets the calling thread's OpenMP threads to blas_threads(), the count
// OpenBLAS runs on, before it creates or runs a primitive: oneDNN picks its blocking for the
// threads it will run on, and the primitive is cached under that count.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "zerodp/model/gemm.h"

namespace zerodp::model::onednn {

// Whether oneDNN can build a matmul in `compute` on this CPU (false where not built in).
bool available(Compute compute);

// Bytes of scratch the product needs: the bf16 operands (none in fp32) and oneDNN's own.
std::size_t scratch_bytes(Compute compute, bool ta, bool tb, std::size_t m, std::size_t n,
                          std::size_t k, float alpha, std::size_t lda, std::size_t ldb, float beta,
                          std::size_t ldc);

// C = alpha op(A) op(B) + beta C, m, n, k >= 1: gemm() returns before for an empty C, and
// gives a product of no terms (k = 0: C = beta C) to OpenBLAS. Returns the seconds spent
// rounding the operands to bf16, on `clock` (0 when off, and in fp32); nothing, having written
// nothing, when the scratch is smaller than scratch_bytes(). a_rounded (bf16): A's bf16 form is
// already at the front of the scratch, packed as this call would pack it; it is not redone.
std::optional<double> matmul(Compute compute, std::span<float> scratch, bool ta, bool tb,
                             std::size_t m, std::size_t n, std::size_t k, float alpha,
                             const float* a, std::size_t lda, const float* b, std::size_t ldb,
                             float beta, float* c, std::size_t ldc, GemmClock clock,
                             bool a_rounded);

}  // namespace zerodp::model::onednn

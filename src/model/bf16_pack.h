// A stored fp32 matrix rounded to bf16 and packed: the operands of oneDNN's bf16 products
// (onednn_matmul.h), the pass that bf16 compute adds to every product.
//
// Contract: to[r * cols + i] = float_to_bf16(from[r * ld + i]) for every row r < rows and
// column i < cols (nearest, ties to even; NaN stays NaN, made quiet), on every CPU. Where the
// CPU runs AVX-512 the rounding is computed 16 elements at a time with the same integer
// arithmetic (about twice the AVX2 loop's rate on operands in cache); not with the CPU's own
// VCVTNEPS2BF16, which would be faster still but flushes subnormal inputs to zero, so that an
// operand would round one way here and another in the emulated kernel and everywhere else
// zerodp rounds to bf16. `to` and `from` do not overlap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zerodp::model {

void pack_bf16(std::uint16_t* to, const float* from, std::size_t rows, std::size_t cols,
               std::size_t ld);

// The two variants pack_bf16 chooses between, for the tests that hold them to each other.
void pack_bf16_baseline(std::uint16_t* to, const float* from, std::size_t rows, std::size_t cols,
                        std::size_t ld);
// Only where cpu_runs_avx512() (avx512.h).
void pack_bf16_avx512(std::uint16_t* to, const float* from, std::size_t rows, std::size_t cols,
                      std::size_t ld);

}  // namespace zerodp::model

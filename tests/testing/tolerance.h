// Rounding-error bounds for the tests' fp32 comparisons, derived from the arithmetic rather
// than tuned on one machine (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
// section 3.1):
//  - u = 2^-24 is fp32's unit roundoff (half its machine epsilon 2^-23): one rounding of a
//    result r errs by at most u |r|;
//  - a sum or dot product of n terms (n products and their n - 1 additions), in ANY order or
//    grouping, with or without FMA, errs by at most gamma(n) * sum |terms|, with
//    gamma(n) = n u / (1 - n u).
// A bound relative to the result would depend on how much the terms cancel, and OpenBLAS's
// kernels (AVX2, AVX-512) sum in different orders; a bound relative to sum |terms| holds for
// every order, so on every machine.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace zerodp::tolerance {

inline constexpr double kUnitRoundoff = 0x1p-24;  // u
inline constexpr double kFp32Epsilon = 0x1p-23;   // 2 u

// gamma(n) = n u / (1 - n u): the relative bound of an n-term fp32 sum or dot product.
constexpr double gamma(double n) {
  return n * kUnitRoundoff / (1.0 - n * kUnitRoundoff);
}

// The most an n-term fp32 sum whose |terms| add up to abs_sum can be off from the exact sum.
constexpr double sum_error(double n, double abs_sum) {
  return gamma(n) * abs_sum;
}

// bf16 compute (zerodp/model/gemm.h) rounds both operands of every product to bf16 first:
// u_b = 2^-8 is bf16's unit roundoff (8 significant bits, rounded to nearest).
inline constexpr double kBf16UnitRoundoff = 0x1p-8;

// The most an n-term dot product in bf16 compute, whose exact |terms| |a b| add up to abs_sum,
// can be off from the exact dot product of the UNROUNDED operands: each term becomes
// a b (1 + d1)(1 + d2) with |d1|, |d2| <= u_b, off by (2 u_b + u_b^2) |a b|; that rounded term
// is exact in fp32 (8 + 8 significant bits), and the fp32 sum of the rounded terms errs by
// gamma(n) sum |rounded terms| <= gamma(n) (1 + u_b)^2 abs_sum.
constexpr double bf16_dot_error(double n, double abs_sum) {
  const double ub = kBf16UnitRoundoff;
  return (2 * ub + ub * ub + gamma(n) * (1 + ub) * (1 + ub)) * abs_sum;
}

// sum |terms| of every element of the product C [m x n] = A [m x k] B [k x n] (row-major):
// |A| |B|, in double.
inline std::vector<double> abs_product(std::span<const float> a, std::span<const float> b,
                                       std::size_t m, std::size_t k, std::size_t n) {
  std::vector<double> out(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t p = 0; p < k; ++p) {
      const double ai = std::fabs(double{a[i * k + p]});
      for (std::size_t j = 0; j < n; ++j) out[i * n + j] += ai * std::fabs(double{b[p * n + j]});
    }
  }
  return out;
}

}  // namespace zerodp::tolerance

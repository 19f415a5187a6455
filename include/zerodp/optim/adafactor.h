// Adafactor (Shazeer and Stern 2018) as transformers' Adafactor takes a step with the settings
// the Hugging Face Trainer gives it (optim="adafactor": scale_parameter=False,
// relative_step=False, warmup_init=False; beta1=None, eps=(1e-30, 1e-3), clip_threshold=1.0,
// decay_rate=-0.8, the group's weight_decay), on one tensor:
//   g2   = g·g + eps1                                  (eps1 = 1e-30)
//   b    = 1 - t^-0.8                                  (double, then fp32 as torch takes it)
//   matrix (R x C):  row[i] = row[i]·b + (1-b)·mean_j g2[i,j]
//                    col[j] = col[j]·b + (1-b)·mean_i g2[i,j]
//                    u[i,j] = (rsqrt(row[i] / mean(row)) · rsqrt(col[j])) · g[i,j]
//   vector:          v = v·b + (1-b)·g2;   u = rsqrt(v) · g
//   u    = u / max(rms(u) / clip, 1) · lr;   p = p + (-wd·lr)·p;   p = p - u
// with rsqrt(x) = 1 / sqrt(x) (two roundings, as torch's CPU kernel) and rms(u) =
// sqrt(Σ u²) / sqrt(numel).
//
// The means and the RMS are sums over a whole row, column or tensor, which ZeRO cuts across
// ranks. Each is an ExactSum: every term is added exactly into a 320-bit fixed-point number, so
// partial sums from any split, added in any order, give the same number, rounded to fp32 once.
// That is what keeps Adafactor's bits the same at every stage, rank count and bucket size. (torch
// sums in fp32 in an order of its own; the two differ by the rounding of those sums alone.)
//
// Contract: every function is pure or writes only what it is given: safe from any thread. All
// arithmetic is fp32 with correctly rounded operations in the order written (no FMA: the build
// compiles with -ffp-contract=off). scripts/optim_reference.py computes the same step in NumPy,
// and tests/optim/adafactor_test.cc holds the two to the same bits.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace zerodp::optim {

// The Trainer's Adafactor constants (transformers/optimization.py).
inline constexpr float kAdafactorEps1 = 1e-30f;
inline constexpr double kAdafactorDecayRate = -0.8;
inline constexpr float kAdafactorClip = 1.0f;

// The exact sum of non-negative fp32 values: a whole number of 2^-149 (the smallest subnormal)
// in 319 bits, which holds any finite float exactly and the sum of 2^40 of the largest. A NaN
// term makes the sum NaN and an infinite one adds 2^128, whatever the order; value() reads any sum
// from 2^128 (no longer finite in fp32) as +inf, and merge() holds it at exactly 2^128, so that
// sums past it compare equal. Plain data: the engine exchanges it as bytes between ranks.
// Requires fewer than 2^40 terms between merges (a tensor's rows, columns or elements).
struct ExactSum {
  std::array<std::uint64_t, 5> limbs{};  // little-endian: limbs[0] holds 2^-149 .. 2^-86
  // Requires x >= 0, +inf or NaN (-0 counts as 0). Inline: the step adds every element 2 or 3
  // times.
  void add(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    if (u >= 0x7f800000u) {
      add_special(u);
      return;
    }
    const std::uint32_t exponent = u >> 23;
    // value = fraction 2^-149 (subnormal), or (2^23 + fraction) 2^(exponent - 150): a whole
    // number of 2^-149 shifted by exponent - 1 (below 254: two limbs hold it).
    const std::uint64_t mantissa = exponent == 0 ? u : (u & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = exponent == 0 ? 0 : exponent - 1;
    const std::uint32_t k = shift >> 6, off = shift & 63;
    const unsigned __int128 part = static_cast<unsigned __int128>(mantissa) << off;
    const unsigned __int128 now = limbs[k] | (static_cast<unsigned __int128>(limbs[k + 1]) << 64);
    const unsigned __int128 sum = now + part;
    limbs[k] = static_cast<std::uint64_t>(sum);
    limbs[k + 1] = static_cast<std::uint64_t>(sum >> 64);
    if (sum < now) {
      for (std::uint32_t i = k + 2; i < 5 && ++limbs[i] == 0; ++i) {
      }
    }
  }
  void merge(const ExactSum& other);
  // The sum rounded to the nearest fp32, ties to even; +inf from 2^128 on; NaN if a term was.
  float value() const;
  bool operator==(const ExactSum&) const = default;

 private:
  void add_special(std::uint32_t bits);  // +inf, NaN or a negative value
};

// Step t's decay b = 1 - t^-0.8 and 1 - b, each rounded to fp32 from the double Python computes.
struct AdafactorDecay {
  float beta2t;
  float one_minus;
};
AdafactorDecay adafactor_decay(std::int64_t t);

// g2 = (grad·grad_mul)² + eps1 of each element of a piece of a matrix with `cols` columns, whose
// first element is element `first` of the matrix, added to its row's and its column's sums
// (rows[i], cols_sum[j] for the matrix's row i and column j).
void adafactor_accumulate(const float* grad, std::size_t n, float grad_mul, std::uint64_t first,
                          std::uint64_t cols, ExactSum* rows, ExactSum* cols_sum);
// A matrix's factors from its rows' and columns' sums of g2: the states updated (row[R],
// col[C]), then r[i] = rsqrt(row[i] / mean(row)) and c[j] = rsqrt(col[j]).
void adafactor_factors(const ExactSum* row_sums, const ExactSum* col_sums, std::size_t rows,
                       std::size_t cols, AdafactorDecay d, float* row, float* col, float* r,
                       float* c);
// A piece's u: of a matrix, from its factors (first: the piece's first element in the matrix);
// of a vector, from v, which `update_v` first updates with the piece's g2. Adds Σ u² to `sq`.
void adafactor_direction_matrix(const float* grad, std::size_t n, float grad_mul,
                                std::uint64_t first, std::uint64_t cols, const float* r,
                                const float* c, float* u, ExactSum* sq);
void adafactor_direction_vector(const float* grad, std::size_t n, float grad_mul, float* v,
                                bool update_v, AdafactorDecay d, float* u, ExactSum* sq);
// The divisor max(rms(u) / clip, 1) of a tensor of `numel` elements whose Σ u² is `sq`.
float adafactor_divisor(const ExactSum& sq, std::uint64_t numel);
// p = p + (-wd·lr)·p (when wd != 0); p = p - (u / divisor)·lr.
void adafactor_apply(float* param, const float* u, std::size_t n, float divisor, float lr,
                     float weight_decay);

}  // namespace zerodp::optim

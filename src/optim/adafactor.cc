#include "zerodp/optim/adafactor.h"

#include <bit>
#include <cmath>
#include <limits>

#include "zerodp/common/error.h"

namespace zerodp::optim {
namespace {

// 2^128 in units of 2^-149: bit 277, limb 4's bit 21. NaN: limb 4's top bit.
constexpr std::uint64_t kInfBit = std::uint64_t{1} << 21;
constexpr std::uint64_t kNanBit = std::uint64_t{1} << 63;

// Holds the sum at 2^128 once it reaches it, so an infinite sum stays the same number however
// it was reached (every term is non-negative: a sum past 2^128 stays past it).
void saturate(ExactSum& s) {
  if ((s.limbs[4] & kNanBit) != 0) {
    s.limbs = {0, 0, 0, 0, kNanBit};
  } else if (s.limbs[4] >= kInfBit) {
    s.limbs = {0, 0, 0, 0, kInfBit};
  }
}

float ratio(float num, float den) {
  return num / den;
}

float rsqrt(float x) {
  return 1.0f / std::sqrt(x);
}

}  // namespace

void ExactSum::add_special(std::uint32_t u) {
  if (u == 0x80000000u) return;  // -0
  ZERODP_CHECK_MSG(u <= 0x7fffffffu || (u & 0x7fffffffu) > 0x7f800000u,
                   "ExactSum adds non-negative values only");
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    limbs[4] |= kNanBit;
  } else {
    limbs[4] += kInfBit;  // +inf: 2^128, 2^277 units (below 2^40 of them: no carry out)
  }
}

void ExactSum::merge(const ExactSum& other) {
  std::uint64_t carry = 0;
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t a = limbs[i], b = other.limbs[i];
    const std::uint64_t sum = a + b;
    const std::uint64_t out = sum + carry;
    carry = (sum < a) || (out < sum) ? 1 : 0;
    limbs[i] = out;
  }
  // Each side holds fewer than 2^40 terms of at most 2^277 units (the header's bound), so it
  // is below 2^317 or NaN-marked: the top bit marks NaN only if either had it.
  if (((limbs[4] | other.limbs[4]) & kNanBit) != 0 || carry != 0) limbs[4] |= kNanBit;
  saturate(*this);
}

float ExactSum::value() const {
  if ((limbs[4] & kNanBit) != 0) return std::numeric_limits<float>::quiet_NaN();
  if (limbs[4] >= kInfBit) return std::numeric_limits<float>::infinity();
  int top = -1;  // the highest set bit
  for (int i = 4; i >= 0 && top < 0; --i) {
    if (limbs[i] != 0) top = 64 * i + 63 - std::countl_zero(limbs[i]);
  }
  if (top < 0) return 0.0f;
  auto bit = [this](int i) { return i >= 0 && ((limbs[i / 64] >> (i % 64)) & 1u) != 0; };
  if (top < 24) {
    // Below 2^-125: a multiple of 2^-149 under 2^24 of them, exact in fp32.
    return std::ldexp(static_cast<float>(limbs[0]), -149);
  }
  // The 24 bits from `top` down, rounded to nearest with ties to even on the rest.
  std::uint64_t q = 0;
  for (int i = top; i > top - 24; --i) q = (q << 1) | (bit(i) ? 1u : 0u);
  const int guard = top - 24;
  bool sticky = false;
  for (int i = guard - 1; i >= 0 && !sticky; --i) {
    if (i % 64 == 63 && limbs[i / 64] == 0) {
      i -= 63;  // skip an empty limb
      continue;
    }
    sticky = bit(i);
  }
  if (bit(guard) && (sticky || (q & 1u) != 0)) ++q;
  // q 2^(top - 23) in units of 2^-149; q may have carried to 2^24 (still exact in fp32).
  return std::ldexp(static_cast<float>(q), top - 23 - 149);
}

AdafactorDecay adafactor_decay(std::int64_t t) {
  ZERODP_CHECK(t >= 1);
  const double beta2t = 1.0 - std::pow(double(t), kAdafactorDecayRate);
  return {static_cast<float>(beta2t), static_cast<float>(1.0 - beta2t)};
}

void adafactor_accumulate(const float* grad, std::size_t n, float grad_mul, std::uint64_t first,
                          std::uint64_t cols, ExactSum* rows, ExactSum* cols_sum) {
  std::uint64_t i = first / cols, j = first % cols;
  for (std::size_t k = 0; k < n; ++k) {
    const float g = grad[k] * grad_mul;
    const float g2 = g * g + kAdafactorEps1;
    rows[i].add(g2);
    cols_sum[j].add(g2);
    if (++j == cols) j = 0, ++i;
  }
}

void adafactor_factors(const ExactSum* row_sums, const ExactSum* col_sums, std::size_t rows,
                       std::size_t cols, AdafactorDecay d, float* row, float* col, float* r,
                       float* c) {
  ZERODP_CHECK(rows >= 1 && cols >= 1 && rows < (std::size_t{1} << 24) &&
               cols < (std::size_t{1} << 24));
  // update.mean(dim=-1): over a row's C elements; mean(dim=-2): over a column's R.
  for (std::size_t i = 0; i < rows; ++i) {
    const float mean = ratio(row_sums[i].value(), float(cols));
    row[i] = row[i] * d.beta2t + d.one_minus * mean;
  }
  for (std::size_t j = 0; j < cols; ++j) {
    const float mean = ratio(col_sums[j].value(), float(rows));
    col[j] = col[j] * d.beta2t + d.one_minus * mean;
  }
  ExactSum all;
  for (std::size_t i = 0; i < rows; ++i) all.add(row[i]);
  const float row_mean = ratio(all.value(), float(rows));
  for (std::size_t i = 0; i < rows; ++i) r[i] = rsqrt(ratio(row[i], row_mean));
  for (std::size_t j = 0; j < cols; ++j) c[j] = rsqrt(col[j]);
}

void adafactor_direction_matrix(const float* grad, std::size_t n, float grad_mul,
                                std::uint64_t first, std::uint64_t cols, const float* r,
                                const float* c, float* u, ExactSum* sq) {
  std::uint64_t i = first / cols, j = first % cols;
  for (std::size_t k = 0; k < n; ++k) {
    const float g = grad[k] * grad_mul;
    u[k] = (r[i] * c[j]) * g;
    if (sq) sq->add(u[k] * u[k]);
    if (++j == cols) j = 0, ++i;
  }
}

void adafactor_direction_vector(const float* grad, std::size_t n, float grad_mul, float* v,
                                bool update_v, AdafactorDecay d, float* u, ExactSum* sq) {
  for (std::size_t k = 0; k < n; ++k) {
    const float g = grad[k] * grad_mul;
    if (update_v) v[k] = v[k] * d.beta2t + d.one_minus * (g * g + kAdafactorEps1);
    u[k] = rsqrt(v[k]) * g;
    if (sq) sq->add(u[k] * u[k]);
  }
}

float adafactor_divisor(const ExactSum& sq, std::uint64_t numel) {
  ZERODP_CHECK(numel >= 1);
  const float rms = std::sqrt(sq.value()) / static_cast<float>(std::sqrt(double(numel)));
  const float scaled = rms / kAdafactorClip;
  // clamp_(min=1.0): NaN stays NaN.
  return scaled < 1.0f ? 1.0f : scaled;
}

void adafactor_apply(float* param, const float* u, std::size_t n, float divisor, float lr,
                     float weight_decay) {
  const float decay = static_cast<float>(-double(weight_decay) * double(lr));
  for (std::size_t k = 0; k < n; ++k) {
    const float step = (u[k] / divisor) * lr;
    float p = param[k];
    if (weight_decay != 0.0f) p = p + decay * p;
    param[k] = p - step;
  }
}

}  // namespace zerodp::optim

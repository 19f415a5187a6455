// Small math helpers for the layers' inner loops, written so that GCC vectorises them at -O2/-O3
// without -ffast-math, and so that their result is the same bits on every call and every
// machine that compiles the same code (no libm, no reassociation left to the compiler):
//  - lane_sum / lane_max reduce with kLanes independent partial results in a fixed order;
//  - select() picks by a bit mask: GCC does not if-convert a ternary on a float comparison
//    under its default -ftrapping-math, which leaves any loop that clamps unvectorised;
//  - exp_approx is Cephes' expf (range reduction + degree-6 polynomial, about 1 ulp);
//  - sigmoid_approx is 1 / (1 + exp(-x)): relative error about 2e-7 everywhere.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace zerodp::model {

inline constexpr std::size_t kLanes = 8;

// condition ? a : b, without a branch.
inline float select(bool condition, float a, float b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(condition);
  return std::bit_cast<float>((std::bit_cast<std::uint32_t>(a) & mask) |
                              (std::bit_cast<std::uint32_t>(b) & ~mask));
}

// Sum of term(0) + ... + term(n-1), as kLanes partial sums combined at the end.
template <class Term>
inline float lane_sum(std::size_t n, Term term) {
  float acc[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) acc[j] += term(i + j);
  }
  for (std::size_t j = 0; i + j < n; ++j) acc[j] += term(i + j);
  float sum = 0.0f;
  for (std::size_t j = 0; j < kLanes; ++j) sum += acc[j];
  return sum;
}

// max(x[0..n)), n >= 1.
inline float lane_max(std::size_t n, const float* x) {
  float acc[kLanes];
  for (std::size_t j = 0; j < kLanes; ++j) acc[j] = x[0];
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) acc[j] = select(x[i + j] > acc[j], x[i + j], acc[j]);
  }
  for (std::size_t j = 0; i + j < n; ++j) acc[j] = select(x[i + j] > acc[j], x[i + j], acc[j]);
  float m = acc[0];
  for (std::size_t j = 1; j < kLanes; ++j) m = acc[j] > m ? acc[j] : m;
  return m;
}

// e^x for float x; 0 below -87.3 (where e^x leaves the normal range); x is clamped at 88
// above (e^88 = 1.7e38), so the result is never +inf. NaN gives NaN: it takes the arithmetic
// as 0 (a NaN converted to int is undefined behaviour) and is put back at the end, so a
// diverged run's NaN reaches the loss, where training stops on it.
inline float exp_approx(float x) {
  const bool nan = !(x == x);
  const float finite = select(nan, 0.0f, x);
  const float clamped = select(finite > 88.0f, 88.0f, select(finite < -87.3f, -87.3f, finite));
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (exact for |n| < 2^22).
  const float n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  // r = x - n ln 2, with ln 2 split in two so that n * 0.693359375 is exact.
  const float r = (clamped - n * 0.693359375f) + n * 2.12194440e-4f;
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = (p * r2 + r) + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;  // 2^n
  const float y = er * std::bit_cast<float>(bits);
  return select(nan, x, select(x < -87.3f, 0.0f, y));
}

inline float sigmoid_approx(float x) {
  return 1.0f / (1.0f + exp_approx(-x));
}

}  // namespace zerodp::model

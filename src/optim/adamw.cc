#include <cmath>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "zerodp/optim/adamw.h"

#include "zerodp/common/error.h"

namespace zerodp::optim {

void adamw_update(std::span<float> param, std::span<const float> grad, float grad_mul,
                  std::span<float> m, std::span<float> v, float lr, std::int64_t t,
                  const AdamWConfig& c) {
  ZERODP_CHECK(grad.size() == param.size() && m.size() == param.size() &&
               v.size() == param.size() && t >= 1);
  // Bias corrections in double: they are per-step scalars, and pow() of a float loses bits.
  const float bc1 = static_cast<float>(1.0 - std::pow(double(c.beta1), double(t)));
  const float bc2 = static_cast<float>(1.0 - std::pow(double(c.beta2), double(t)));
  const float one_minus_b1 = 1.0f - c.beta1, one_minus_b2 = 1.0f - c.beta2;
  const std::size_t n = param.size();
  float* __restrict p = param.data();
  const float* __restrict g_in = grad.data();
  float* __restrict mm = m.data();
  float* __restrict vv = v.data();
  std::size_t i = 0;
#if defined(__AVX__)
  // The scalar loop below, eight elements at a time: the same operations in the same order,
  // each correctly rounded (no FMA), so the same bits. GCC leaves the scalar loop unvectorised
  // because std::sqrt may set errno.
  const __m256 b1 = _mm256_set1_ps(c.beta1), b2 = _mm256_set1_ps(c.beta2);
  const __m256 omb1 = _mm256_set1_ps(one_minus_b1), omb2 = _mm256_set1_ps(one_minus_b2);
  const __m256 vbc1 = _mm256_set1_ps(bc1), vbc2 = _mm256_set1_ps(bc2);
  const __m256 vmul = _mm256_set1_ps(grad_mul), vlr = _mm256_set1_ps(lr);
  const __m256 veps = _mm256_set1_ps(c.eps), vwd = _mm256_set1_ps(c.weight_decay);
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(g_in + i), vmul);
    const __m256 m1 =
        _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(mm + i)), _mm256_mul_ps(omb1, g));
    const __m256 v1 = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(vv + i)),
                                    _mm256_mul_ps(omb2, _mm256_mul_ps(g, g)));
    _mm256_storeu_ps(mm + i, m1);
    _mm256_storeu_ps(vv + i, v1);
    const __m256 m_hat = _mm256_div_ps(m1, vbc1);
    const __m256 v_hat = _mm256_div_ps(v1, vbc2);
    const __m256 pi = _mm256_loadu_ps(p + i);
    const __m256 step = _mm256_add_ps(
        _mm256_div_ps(m_hat, _mm256_add_ps(_mm256_sqrt_ps(v_hat), veps)), _mm256_mul_ps(vwd, pi));
    _mm256_storeu_ps(p + i, _mm256_sub_ps(pi, _mm256_mul_ps(vlr, step)));
  }
#endif
  for (; i < n; ++i) {
    const float g = g_in[i] * grad_mul;
    mm[i] = c.beta1 * mm[i] + one_minus_b1 * g;
    vv[i] = c.beta2 * vv[i] + one_minus_b2 * (g * g);
    const float m_hat = mm[i] / bc1;
    const float v_hat = vv[i] / bc2;
    p[i] -= lr * (m_hat / (std::sqrt(v_hat) + c.eps) + c.weight_decay * p[i]);
  }
}

}  // namespace zerodp::optim

#include <array>
#include <cmath>
#include <string>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "zerodp/common/error.h"
#include "zerodp/optim/rule.h"

namespace zerodp::optim {
namespace {

// The spans a step with `slots` slots may be given: one length, the unused slots empty.
void check_spans(const StepSpans& s, std::size_t slots) {
  ZERODP_CHECK(s.grad.size() == s.param.size());
  for (std::size_t k = 0; k < 2; ++k) {
    ZERODP_CHECK(s.slot[k].size() == (k < slots ? s.param.size() : 0));
  }
}

// Learning rates for the default GPT, each the best of scripts/optimizer_quality.sh's runs
// (300 steps of make run's configuration at half, once and twice a rate; docs/performance.md):
// Lion's a third of AdamW's with ten times its decay (Chen et al. 2023 advise 3-10x smaller and
// 3-10x larger); SGD's with momentum 0.1 (0.05 ended 0.006 lower, 0.025 higher again), plain
// SGD's 0.25 (1, the momentum run's effective step, ended 0.64 higher).
// Filled on first use (function-local statics), so no order of static initialisation matters.
// The 8-bit rows take their 32-bit rows' rates and hyper-parameters: the quality comparison of
// docs/performance.md holds everything else equal. Adafactor's rate is the best of 5e-4, 1e-3 and
// 2e-3 (its updates have an RMS up to 1, as sign-like as Lion's early on); it takes the Trainer's
// settings
// (optim/adafactor.h; of Hyper it reads weight_decay alone, the Trainer's 0) and steps by tensor,
// not through `step`.
const std::array<Rule, 7>& rules() {
  constexpr Hyper kLion{.beta1 = 0.9f, .beta2 = 0.99f, .eps = 0.0f, .weight_decay = 1.0f};
  static const std::array<Rule, 7> kRules = {{
      {&optimizer_row(Optimizer::adam), adamw_step, Hyper{}, 2e-3f},
      {&optimizer_row(Optimizer::adam_8bit), adamw8_step, Hyper{}, 2e-3f},
      {&optimizer_row(Optimizer::adafactor), nullptr,
       Hyper{.beta1 = 0.0f, .beta2 = 0.0f, .eps = 1e-30f, .weight_decay = 0.0f}, 1e-3f},
      {&optimizer_row(Optimizer::lion), lion_step, kLion, 6e-4f},
      {&optimizer_row(Optimizer::lion_8bit), lion_step, kLion, 6e-4f},
      {&optimizer_row(Optimizer::sgd_momentum), sgd_momentum_step,
       Hyper{.beta1 = 0.9f, .beta2 = 0.0f, .eps = 0.0f, .weight_decay = 0.0f}, 1e-1f},
      {&optimizer_row(Optimizer::sgd), sgd_step,
       Hyper{.beta1 = 0.0f, .beta2 = 0.0f, .eps = 0.0f, .weight_decay = 0.0f}, 0.25f},
  }};
  return kRules;
}

}  // namespace

const Rule* engine_rule(Optimizer id) {
  for (const Rule& r : rules()) {
    if (r.row->id == id) return &r;
  }
  return nullptr;
}

std::string_view engine_word(const OptimizerRow& row) {
  return row.id == Optimizer::adam ? "adamw" : row.word;
}

std::string engine_optimizer_words() {
  std::string out;
  for (const Rule& r : rules()) {
    out += (out.empty() ? "" : ", ") + std::string(engine_word(*r.row));
  }
  return out;
}

void adamw_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t, const Hyper& c) {
  check_spans(s, 2);
  ZERODP_CHECK(t >= 1);
  // Bias corrections in double: they are per-step scalars, and pow() of a float loses bits.
  const float bc1 = static_cast<float>(1.0 - std::pow(double(c.beta1), double(t)));
  const float bc2 = static_cast<float>(1.0 - std::pow(double(c.beta2), double(t)));
  const float one_minus_b1 = 1.0f - c.beta1, one_minus_b2 = 1.0f - c.beta2;
  const std::size_t n = s.param.size();
  float* __restrict p = s.param.data();
  const float* __restrict g_in = s.grad.data();
  float* __restrict mm = s.slot[0].data();
  float* __restrict vv = s.slot[1].data();
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

void lion_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t, const Hyper& c) {
  check_spans(s, 1);
  ZERODP_CHECK(t >= 1);
  const float decay = 1.0f - lr * c.weight_decay;
  const float one_minus_b1 = 1.0f - c.beta1, one_minus_b2 = 1.0f - c.beta2;
  const std::size_t n = s.param.size();
  float* __restrict p = s.param.data();
  const float* __restrict g_in = s.grad.data();
  float* __restrict m = s.slot[0].data();
  std::size_t i = 0;
#if defined(__AVX__)
  // The scalar loop below, eight elements at a time, the same operations in the same order
  // (no FMA), the sign chosen by masks: GCC leaves the scalar loop's choice a branch, which the
  // sign of a gradient mispredicts half the time (the step ran 18 times as long as AdamW's).
  const __m256 b1 = _mm256_set1_ps(c.beta1), b2 = _mm256_set1_ps(c.beta2);
  const __m256 omb1 = _mm256_set1_ps(one_minus_b1), omb2 = _mm256_set1_ps(one_minus_b2);
  const __m256 vmul = _mm256_set1_ps(grad_mul), vdecay = _mm256_set1_ps(decay);
  const __m256 vlr = _mm256_set1_ps(lr), vneg_lr = _mm256_set1_ps(-lr);
  const __m256 zero = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(g_in + i), vmul);
    const __m256 mi = _mm256_loadu_ps(m + i);
    const __m256 u = _mm256_add_ps(_mm256_mul_ps(b1, mi), _mm256_mul_ps(omb1, g));
    __m256 signed_lr = _mm256_mul_ps(u, vlr);  // 0 when u is 0, NaN when u is NaN
    signed_lr = _mm256_blendv_ps(signed_lr, vlr, _mm256_cmp_ps(u, zero, _CMP_GT_OQ));
    signed_lr = _mm256_blendv_ps(signed_lr, vneg_lr, _mm256_cmp_ps(u, zero, _CMP_LT_OQ));
    _mm256_storeu_ps(p + i,
                     _mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(p + i), vdecay), signed_lr));
    _mm256_storeu_ps(m + i, _mm256_add_ps(_mm256_mul_ps(b2, mi), _mm256_mul_ps(omb2, g)));
  }
#endif
  for (; i < n; ++i) {
    const float g = g_in[i] * grad_mul;
    const float u = c.beta1 * m[i] + one_minus_b1 * g;
    // sign(u) times lr, exactly: lr, -lr or 0 (torch.sign(0) is 0; a NaN stays NaN).
    const float signed_lr = u > 0.0f ? lr : u < 0.0f ? -lr : u * lr;
    p[i] = p[i] * decay - signed_lr;
    m[i] = c.beta2 * m[i] + one_minus_b2 * g;
  }
}

// The loops below have no sqrt, no call and no choice: GCC vectorises them as written, each
// lane the scalar's operations in the same order (no FMA), so the same bits.
void sgd_momentum_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t,
                       const Hyper& c) {
  check_spans(s, 1);
  ZERODP_CHECK(t >= 1);
  const std::size_t n = s.param.size();
  float* __restrict p = s.param.data();
  const float* __restrict g_in = s.grad.data();
  float* __restrict buf = s.slot[0].data();
  for (std::size_t i = 0; i < n; ++i) {
    buf[i] = c.beta1 * buf[i] + g_in[i] * grad_mul;
    p[i] -= lr * buf[i];
  }
}

void sgd_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t, const Hyper&) {
  check_spans(s, 0);
  ZERODP_CHECK(t >= 1);
  const std::size_t n = s.param.size();
  float* __restrict p = s.param.data();
  const float* __restrict g_in = s.grad.data();
  for (std::size_t i = 0; i < n; ++i) p[i] -= lr * (g_in[i] * grad_mul);
}

void adamw8_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t, const Hyper& h) {
  ZERODP_CHECK(t >= 1 && s.grad.size() == s.param.size() && s.slot[0].size() == s.param.size() &&
               s.slot[1].size() == s.param.size());
  const std::size_t n = s.param.size();
  float* __restrict p = s.param.data();
  const float* __restrict grad = s.grad.data();
  float* __restrict m = s.slot[0].data();
  float* __restrict v = s.slot[1].data();
  const float a1 = float(1.0 - double(h.beta1)), a2 = float(1.0 - double(h.beta2));
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grad[i] * grad_mul;
    m[i] = m[i] * h.beta1 + a1 * g;
    v[i] = v[i] * h.beta2 + (a2 * g) * g;
  }
  const double c1 = 1.0 - std::pow(double(h.beta1), double(t));
  const float c2 = float(std::sqrt(1.0 - std::pow(double(h.beta2), double(t))));
  const float step = float(-double(lr) / c1);
  const float decay = float(1.0 - double(lr) * double(h.weight_decay));
  const bool decays = h.weight_decay > 0.0f;
  std::size_t i = 0;
#if defined(__AVX__)
  // The scalar loop below, eight elements at a time: the same correctly rounded operations in
  // the same order (GCC leaves it scalar: std::sqrt may set errno).
  const __m256 vc2 = _mm256_set1_ps(c2), veps = _mm256_set1_ps(h.eps);
  const __m256 vstep = _mm256_set1_ps(step), vdecay = _mm256_set1_ps(decay);
  for (; i + 8 <= n; i += 8) {
    const __m256 denom =
        _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(_mm256_loadu_ps(v + i)), vc2), veps);
    __m256 q = _mm256_loadu_ps(p + i);
    if (decays) q = _mm256_mul_ps(q, vdecay);
    _mm256_storeu_ps(
        p + i,
        _mm256_add_ps(q, _mm256_div_ps(_mm256_mul_ps(vstep, _mm256_loadu_ps(m + i)), denom)));
  }
#endif
  for (; i < n; ++i) {
    const float denom = std::sqrt(v[i]) / c2 + h.eps;
    const float q = decays ? p[i] * decay : p[i];
    p[i] = q + (step * m[i]) / denom;
  }
}

}  // namespace zerodp::optim

#include <cmath>

#include "zerodp/error.h"
#include "zerodp/optim.h"

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
  for (std::size_t i = 0; i < n; ++i) {
    const float g = g_in[i] * grad_mul;
    mm[i] = c.beta1 * mm[i] + one_minus_b1 * g;
    vv[i] = c.beta2 * vv[i] + one_minus_b2 * (g * g);
    const float m_hat = mm[i] / bc1;
    const float v_hat = vv[i] / bc2;
    p[i] -= lr * (m_hat / (std::sqrt(v_hat) + c.eps) + c.weight_decay * p[i]);
  }
}

LossScaler::LossScaler(const LossScaleConfig& config, bool dynamic)
    : config_(config), dynamic_(dynamic), scale_(dynamic ? config.initial : 1.0f) {}

bool LossScaler::update(bool overflow) {
  if (!overflow) {
    if (dynamic_ && ++good_steps_ >= config_.growth_interval) {
      scale_ *= 2.0f;
      good_steps_ = 0;
    }
    return false;
  }
  good_steps_ = 0;
  if (dynamic_) scale_ = std::max(config_.min_scale, scale_ * 0.5f);
  return true;
}

}  // namespace zerodp::optim

// AdamW's update against the formula of optim/adamw.h written out one element at a time: the same
// bits, whatever the length (the vectorised body and its scalar tail) and the step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "zerodp/common/rng.h"
#include "zerodp/optim/adamw.h"
#include "zerodp/optim/loss_scaler.h"
#include "zerodp/optim/schedule.h"

namespace zerodp::optim {
namespace {

TEST(AdamW, EveryElementIsTheFormulasBits) {
  AdamWConfig c;
  for (std::size_t n : {1, 7, 8, 9, 64, 1001}) {
    std::vector<float> p(n), g(n), m(n), v(n);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = counter_normal(1, 0, i);
      g[i] = i % 13 == 0 ? 0.0f : 1e-3f * counter_normal(2, 0, i);
      m[i] = 1e-3f * counter_normal(3, 0, i);
      v[i] = std::fabs(1e-6f * counter_normal(4, 0, i));
    }
    std::vector<float> rp = p, rm = m, rv = v;
    for (std::int64_t t = 1; t <= 3; ++t) {
      const float lr = 1e-3f * float(t), grad_mul = 0.5f;
      adamw_update(p, g, grad_mul, m, v, lr, t, c);
      const float bc1 = float(1.0 - std::pow(double(c.beta1), double(t)));
      const float bc2 = float(1.0 - std::pow(double(c.beta2), double(t)));
      for (std::size_t i = 0; i < n; ++i) {
        const float gi = g[i] * grad_mul;
        rm[i] = c.beta1 * rm[i] + (1.0f - c.beta1) * gi;
        rv[i] = c.beta2 * rv[i] + (1.0f - c.beta2) * (gi * gi);
        const float m_hat = rm[i] / bc1, v_hat = rv[i] / bc2;
        rp[i] -= lr * (m_hat / (std::sqrt(v_hat) + c.eps) + c.weight_decay * rp[i]);
      }
      ASSERT_EQ(std::memcmp(p.data(), rp.data(), n * sizeof(float)), 0) << n << " " << t;
      ASSERT_EQ(std::memcmp(m.data(), rm.data(), n * sizeof(float)), 0) << n << " " << t;
      ASSERT_EQ(std::memcmp(v.data(), rv.data(), n * sizeof(float)), 0) << n << " " << t;
    }
  }
}

}  // namespace
}  // namespace zerodp::optim

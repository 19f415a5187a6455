// Each step of optim/rule.h against its published algorithm written out one element at a time:
// the same bits, whatever the length (vectorised bodies and their scalar tails) and the step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "zerodp/common/rng.h"
#include "zerodp/optim/loss_scaler.h"
#include "zerodp/optim/rule.h"
#include "zerodp/optim/schedule.h"

namespace zerodp::optim {
namespace {

TEST(AdamW, EveryElementIsTheFormulasBits) {
  const Hyper c;
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
      adamw_step({.param = p, .grad = g, .slot = {m, v}}, grad_mul, lr, t, c);
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

// Inputs with zeros, both signs and a momentum that cancels the gradient exactly (sign 0).
struct Inputs {
  std::vector<float> p, g, m;
  explicit Inputs(std::size_t n) : p(n), g(n), m(n) {
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = counter_normal(5, 0, i);
      g[i] = i % 11 == 0 ? 0.0f : 1e-2f * counter_normal(6, 0, i);
      m[i] = i % 7 == 0 ? 0.0f : 1e-2f * counter_normal(7, 0, i);
    }
  }
};

TEST(Lion, EveryElementIsChenEtAlsAlgorithm) {
  const Hyper c{.beta1 = 0.9f, .beta2 = 0.99f, .eps = 0.0f, .weight_decay = 0.5f};
  for (std::size_t n : {1, 7, 8, 9, 64, 1001}) {
    Inputs in(n);
    std::vector<float> rp = in.p, rm = in.m;
    for (std::int64_t t = 1; t <= 3; ++t) {
      const float lr = 1e-3f * float(t), grad_mul = 0.5f;
      lion_step({.param = in.p, .grad = in.g, .slot = {in.m, {}}}, grad_mul, lr, t, c);
      for (std::size_t i = 0; i < n; ++i) {
        // lion-pytorch: p.mul_(1 - lr wd); update = (m b1 + g (1 - b1)).sign(); p.add_(update,
        // alpha=-lr); m = m b2 + g (1 - b2).
        const float g = in.g[i] * grad_mul;
        const float u = rm[i] * c.beta1 + g * (1.0f - c.beta1);
        const float sign = u > 0.0f ? 1.0f : u < 0.0f ? -1.0f : 0.0f;
        rp[i] = rp[i] * (1.0f - lr * c.weight_decay);
        rp[i] = rp[i] + sign * -lr;
        rm[i] = rm[i] * c.beta2 + g * (1.0f - c.beta2);
      }
      ASSERT_EQ(std::memcmp(in.p.data(), rp.data(), n * sizeof(float)), 0) << n << " " << t;
      ASSERT_EQ(std::memcmp(in.m.data(), rm.data(), n * sizeof(float)), 0) << n << " " << t;
    }
  }
  // A zero gradient on a zero momentum moves the weight by its decay alone.
  std::vector<float> p = {2.0f}, g = {0.0f}, m = {0.0f};
  lion_step({.param = p, .grad = g, .slot = {m, {}}}, 1.0f, 0.25f, 1, c);
  EXPECT_EQ(p[0], 2.0f * (1.0f - 0.25f * 0.5f));
}

TEST(Sgd, MomentumIsTorchsBufferAndPlainSgdHasNone) {
  const Hyper c{.beta1 = 0.9f, .beta2 = 0.0f, .eps = 0.0f, .weight_decay = 0.0f};
  for (std::size_t n : {1, 9, 1001}) {
    Inputs in(n);
    std::fill(in.m.begin(), in.m.end(), 0.0f);  // torch starts the buffer as the first gradient
    Inputs plain(n);
    std::vector<float> rp = in.p, rbuf(n), plain_p = plain.p;
    for (std::int64_t t = 1; t <= 3; ++t) {
      const float lr = 0.1f, grad_mul = 0.5f;
      sgd_momentum_step({.param = in.p, .grad = in.g, .slot = {in.m, {}}}, grad_mul, lr, t, c);
      sgd_step({.param = plain.p, .grad = plain.g}, grad_mul, lr, t, c);
      for (std::size_t i = 0; i < n; ++i) {
        const float g = in.g[i] * grad_mul;
        // torch.optim.SGD: buf = g at the first step, then buf = momentum buf + g.
        rbuf[i] = t == 1 ? g : c.beta1 * rbuf[i] + g;
        rp[i] -= lr * rbuf[i];
        plain_p[i] -= lr * g;
      }
      ASSERT_EQ(std::memcmp(in.p.data(), rp.data(), n * sizeof(float)), 0) << n << " " << t;
      ASSERT_EQ(std::memcmp(in.m.data(), rbuf.data(), n * sizeof(float)), 0) << n << " " << t;
      ASSERT_EQ(std::memcmp(plain.p.data(), plain_p.data(), n * sizeof(float)), 0) << n << " " << t;
    }
  }
}

TEST(EngineRules, EveryRuleIsItsRowAndTheWordsListThem) {
  EXPECT_EQ(engine_optimizer_words(),
            "adamw, adamw-8bit, adafactor, lion, lion-8bit, sgd-momentum, sgd");
  for (Optimizer id : {Optimizer::adam, Optimizer::lion, Optimizer::sgd_momentum, Optimizer::sgd}) {
    const Rule* r = engine_rule(id);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->row->id, id);
    EXPECT_TRUE(r->row->fp32_master);
    for (const StateSlot& slot : r->row->slots) EXPECT_EQ(slot.format, SlotFormat::fp32);
    EXPECT_GT(r->default_lr, 0.0f);
  }
  EXPECT_EQ(engine_rule(Optimizer::adam)->row->slots.size(), 2u);
  EXPECT_EQ(engine_rule(Optimizer::lion)->row->slots.size(), 1u);
  EXPECT_EQ(engine_rule(Optimizer::sgd)->row->slots.size(), 0u);
  // The 8-bit rows: int8 block-wise slots and an elementwise step on their dequantized values,
  // bitsandbytes' order of AdamW's operations, and Lion's own step.
  for (Optimizer id : {Optimizer::adam_8bit, Optimizer::lion_8bit}) {
    const Rule* eight = engine_rule(id);
    ASSERT_NE(eight, nullptr);
    EXPECT_TRUE(eight->blockwise());
    EXPECT_TRUE(eight->row->fp32_master);
    for (const StateSlot& slot : eight->row->slots)
      EXPECT_EQ(slot.format, SlotFormat::int8_blockwise);
    EXPECT_EQ(eight->row->block, 256u);
    EXPECT_EQ(eight->row->min_quantized, 4096u);
  }
  EXPECT_EQ(engine_rule(Optimizer::adam_8bit)->step, adamw8_step);
  EXPECT_EQ(engine_rule(Optimizer::lion_8bit)->step, lion_step);
  EXPECT_FALSE(engine_rule(Optimizer::adam)->blockwise());
  // Adafactor: the Trainer's (no first moment), its second moment factored, stepped by tensor.
  const Rule* adafactor = engine_rule(Optimizer::adafactor);
  ASSERT_NE(adafactor, nullptr);
  EXPECT_TRUE(adafactor->factored());
  EXPECT_FALSE(adafactor->blockwise());
  EXPECT_EQ(adafactor->row->slots.size(), 1u);
  EXPECT_EQ(adafactor->step, nullptr);
  EXPECT_EQ(adafactor->defaults.weight_decay, 0.0f);
  for (Optimizer id : {Optimizer::adam, Optimizer::adam_8bit, Optimizer::lion, Optimizer::sgd})
    EXPECT_FALSE(engine_rule(id)->factored()) << optimizer_row(id).word;
  // Rows the planner counts but the engine does not run.
  for (Optimizer id :
       {Optimizer::paged_adam_8bit, Optimizer::adafactor_beta1, Optimizer::adam_bf16}) {
    EXPECT_EQ(engine_rule(id), nullptr) << optimizer_row(id).word;
  }
}

}  // namespace
}  // namespace zerodp::optim

#include "zerodp/model/mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/finite_difference.h"
#include "testing/tolerance.h"
#include "zerodp/data/samples.h"

namespace zerodp::model {
namespace {

struct Runner {
  explicit Runner(const MlpConfig& c) : mlp(c), params(c.param_count()), source(c.width, 1234) {
    for (std::size_t u = 0; u < mlp.units().size(); ++u) {
      const auto& unit = mlp.units()[u];
      mlp.init_unit(int(u), {params.data() + unit.param_offset, unit.param_count}, 7);
    }
  }
  UnitViews views(int u, std::vector<float>* grads) {
    const auto& unit = mlp.units()[u];
    UnitViews v;
    v.params.emplace_back(params.data() + unit.param_offset, unit.param_count);
    if (grads) v.grads.emplace_back(grads->data() + unit.param_offset, unit.param_count);
    return v;
  }
  // Samples [first, first + n) of the synthetic train stream; valid until the next draw.
  MicroBatch draw(std::uint64_t first, std::size_t n, float grad_scale = 1.0f) {
    source.draw(data::Split::train, first, n, batch);
    return {
        .samples = n, .inputs = batch.inputs, .targets = batch.targets, .grad_scale = grad_scale};
  }
  float loss(const MicroBatch& b) {
    mlp.begin_micro_batch(b);
    for (int u = 0; u < int(mlp.units().size()); ++u) mlp.forward(u, views(u, nullptr));
    return mlp.loss();
  }
  std::vector<float> grad(const MicroBatch& b) {
    std::vector<float> g(params.size(), 0.0f);
    loss(b);
    for (int u = int(mlp.units().size()) - 1; u >= 0; --u) mlp.backward(u, views(u, &g));
    return g;
  }
  Mlp mlp;
  std::vector<float> params;
  data::SyntheticRegression source;
  data::Batch batch;
};

// The most the MLP's fp32 loss on batch b can be off from its exact value at `params`, to
// first order, layer by layer in double: pre = b + W x errs by gamma(W + 1) (|b| + |W| |x|) plus
// |W| times the error of x; GELU adds |gelu'(pre)| times that, and its own rounding: tanhf
// (2 ulp, glibc) of an argument off by gamma(6) of itself, 1 + tanh, the products (4
// roundings). The loss, mean(d^2) in double, then errs by mean(2 |d| error(out)) and its
// rounding to fp32.
double mlp_loss_error(const MlpConfig& c, const std::vector<float>& params, const MicroBatch& b) {
  using tolerance::gamma;
  const double u = tolerance::kUnitRoundoff, scale = std::sqrt(2.0 / M_PI);
  const std::size_t W = c.width;
  double sum = 0, error = 0;
  for (std::size_t n = 0; n < b.samples; ++n) {
    std::vector<double> x(b.inputs.begin() + n * W, b.inputs.begin() + (n + 1) * W), dx(W, 0.0);
    for (int l = 0; l < c.depth; ++l) {
      const float* w = params.data() + std::size_t(l) * (W * W + W);
      std::vector<double> y(W), dy(W);
      for (std::size_t o = 0; o < W; ++o) {
        double pre = w[W * W + o], terms = std::fabs(pre), propagated = 0;
        for (std::size_t j = 0; j < W; ++j) {
          pre += double{w[o * W + j]} * x[j];
          terms += std::fabs(w[o * W + j] * x[j]);
          propagated += std::fabs(w[o * W + j]) * dx[j];
        }
        const double dpre = gamma(W + 1) * terms + propagated;
        const double inner = scale * (pre + 0.044715 * pre * pre * pre);
        const double th = std::tanh(inner);
        y[o] = 0.5 * pre * (1 + th);
        const double slope =
            0.5 * (1 + th) + 0.5 * pre * (1 - th * th) * scale * (1 + 3 * 0.044715 * pre * pre);
        dy[o] = std::fabs(slope) * dpre +
                0.5 * std::fabs(pre) *
                    ((1 - th * th) * gamma(6) * std::fabs(inner) + 4 * u * std::fabs(th) +
                     u * (1 + std::fabs(th))) +
                4 * u * std::fabs(y[o]);
      }
      x = y, dx = dy;
    }
    for (std::size_t j = 0; j < W; ++j) {
      const double d = x[j] - double{b.targets[n * W + j]};
      sum += d * d;
      error += 2 * std::fabs(d) * dx[j];
    }
  }
  const double n = double(b.samples * W);
  return error / n + u * sum / n;
}

TEST(Mlp, ForParamsComesClose) {
  for (std::uint64_t p : {3ull, 100ull, 10'000ull, 1'000'000ull, 10'000'000ull, 100'000'000ull}) {
    MlpConfig c = MlpConfig::for_params(p);
    EXPECT_GE(c.depth, 1);
    const double ratio = double(c.param_count()) / double(p);
    if (p >= 10'000) {
      EXPECT_GT(ratio, 0.85) << p;
      EXPECT_LT(ratio, 1.15) << p;
    }
  }
  EXPECT_EQ(MlpConfig::for_params(10'000'000).width, 1024u);
}

TEST(Mlp, BackwardMatchesFiniteDifferences) {
  MlpConfig c;
  c.width = 6;
  c.depth = 3;
  Runner r(c);
  const MicroBatch b = r.draw(5, 4);
  std::vector<float> g = r.grad(b);
  // Central differences against a bound from the loss's rounding (finite_difference.h).
  const auto fd = testing::fd_check("mlp", r.params, g, [&] { return double{r.loss(b)}; },
                                    {.objective_error = mlp_loss_error(c, r.params, b)});
  EXPECT_LT(fd.worst, 1.0);
}

TEST(Mlp, GradScaleScalesGradientsAndBackwardAccumulates) {
  MlpConfig c;
  c.width = 8;
  c.depth = 2;
  Runner r(c);
  std::vector<float> g1 = r.grad(r.draw(0, 3, 1.0f));
  std::vector<float> g4 = r.grad(r.draw(0, 3, 4.0f));
  // grad_scale 4, a power of two, scales every term of every sum exactly: 4 times the bits.
  for (std::size_t i = 0; i < g1.size(); ++i) EXPECT_EQ(g4[i], 4.0f * g1[i]);
}

TEST(Mlp, SamplesDependOnlyOnTheirIndex) {
  MlpConfig c;
  c.width = 4;
  c.depth = 1;
  Runner r(c);
  // Loss of samples [0, 4) as one batch equals the mean of two batches of two.
  // Exactly, whole = (first + second) / 2; each computed loss is within its rounding bound.
  MicroBatch b = r.draw(0, 4);
  const double whole = r.loss(b), whole_error = mlp_loss_error(c, r.params, b);
  b = r.draw(0, 2);
  const double first = r.loss(b), first_error = mlp_loss_error(c, r.params, b);
  b = r.draw(2, 2);
  const double second = r.loss(b), second_error = mlp_loss_error(c, r.params, b);
  EXPECT_NEAR(whole, (first + second) / 2, whole_error + (first_error + second_error) / 2);
}

}  // namespace
}  // namespace zerodp::model

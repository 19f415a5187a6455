#include "zerodp/mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "zerodp/samples.h"

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
  double worst = 0.0;
  for (std::size_t i = 0; i < r.params.size(); ++i) {
    const float keep = r.params[i];
    const float h = 1e-2f;
    r.params[i] = keep + h;
    const double up = r.loss(b);
    r.params[i] = keep - h;
    const double down = r.loss(b);
    r.params[i] = keep;
    const double fd = (up - down) / (2.0 * h);
    const double err = std::fabs(fd - g[i]) / std::max(1e-3, std::fabs(fd) + std::fabs(g[i]));
    worst = std::max(worst, err);
  }
  std::printf("worst relative difference vs finite differences: %.3g\n", worst);
  EXPECT_LT(worst, 2e-2);
}

TEST(Mlp, GradScaleScalesGradientsAndBackwardAccumulates) {
  MlpConfig c;
  c.width = 8;
  c.depth = 2;
  Runner r(c);
  std::vector<float> g1 = r.grad(r.draw(0, 3, 1.0f));
  std::vector<float> g4 = r.grad(r.draw(0, 3, 4.0f));
  for (std::size_t i = 0; i < g1.size(); ++i) EXPECT_FLOAT_EQ(g4[i], 4.0f * g1[i]);
}

TEST(Mlp, SamplesDependOnlyOnTheirIndex) {
  MlpConfig c;
  c.width = 4;
  c.depth = 1;
  Runner r(c);
  // Loss of samples [0, 4) as one batch equals the mean of two batches of two.
  const double whole = r.loss(r.draw(0, 4));
  const double first = r.loss(r.draw(0, 2));
  const double second = r.loss(r.draw(2, 2));
  EXPECT_NEAR(whole, (first + second) / 2, 1e-6);
}

}  // namespace
}  // namespace zerodp::model

// Every layer's backward against central finite differences of its forward, in fp32, on tiny
// shapes. The objective is sum(out * probe) for a random probe, so d objective / d out = probe
// is what each backward receives. Outputs a backward WRITES are pre-filled with NaN (a missed
// element would show); outputs it ADDS into are pre-filled with a constant that is subtracted
// again (a write instead of an add would show).
#include "zerodp/layers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "model/finite_difference.h"
#include "model/simd_math.h"

namespace zerodp::model {
namespace {

using testing::fd_check;
using testing::probe_dot;
using testing::random_vector;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kPrior = 0.25f;  // what "added into" buffers hold before a backward
// fp32 central differences with h = 1e-2 on O(1) values carry about 5e-5 of absolute noise
// (rounding of the float forward / 2h, and the h^2 truncation, are both of that order); with
// the floor of 1 % of the largest gradient that is up to ~5e-3 relative. A wrong backward is
// off by O(1).
constexpr double kTolerance = 1e-2;

std::vector<float> minus_prior(std::vector<float> v) {
  for (float& x : v) x -= kPrior;
  return v;
}

TEST(Layers, EncoderBackwardMatchesFiniteDifferences) {
  const std::size_t B = 2, T = 3, C = 4, V = 5;
  const std::vector<std::uint8_t> inp = {1, 4, 1, 0, 1, 3};  // a repeated token accumulates
  auto wte = random_vector(V * C, 1, 1.0), wpe = random_vector(T * C, 2, 1.0);
  const auto probe = random_vector(B * T * C, 3, 1.0);
  std::vector<float> out(B * T * C);
  auto objective = [&] {
    encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
    return probe_dot(out, probe);
  };
  std::vector<float> dwte(V * C, kPrior), dwpe(T * C, kPrior);
  encoder_backward(dwte.data(), dwpe.data(), probe.data(), inp.data(), B, T, C);
  EXPECT_LT(fd_check("encoder dwte", wte, minus_prior(dwte), objective).worst, kTolerance);
  EXPECT_LT(fd_check("encoder dwpe", wpe, minus_prior(dwpe), objective).worst, kTolerance);
}

TEST(Layers, LayerNormBackwardMatchesFiniteDifferences) {
  const std::size_t BT = 6, C = 8;
  auto inp = random_vector(BT * C, 4, 1.5, 0.3);
  auto weight = random_vector(C, 5, 0.5, 1.0), bias = random_vector(C, 6, 0.5);
  const auto probe = random_vector(BT * C, 7, 1.0);
  std::vector<float> out(BT * C), mean(BT), rstd(BT);
  auto objective = [&] {
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(),
                      BT, C);
    return probe_dot(out, probe);
  };
  objective();
  std::vector<float> dinp(BT * C, kPrior), dweight(C, kPrior), dbias(C, kPrior);
  layernorm_backward(dinp.data(), dweight.data(), dbias.data(), probe.data(), inp.data(),
                     weight.data(), mean.data(), rstd.data(), BT, C);
  // Statistics of the forward.
  for (std::size_t i = 0; i < BT; ++i) {
    double m = 0, v = 0;
    for (std::size_t c = 0; c < C; ++c) m += inp[i * C + c];
    m /= C;
    for (std::size_t c = 0; c < C; ++c) v += (inp[i * C + c] - m) * (inp[i * C + c] - m);
    EXPECT_NEAR(mean[i], m, 1e-6);
    EXPECT_NEAR(rstd[i], 1.0 / std::sqrt(v / C + 1e-5), 1e-5);
  }
  EXPECT_LT(fd_check("layernorm dinp", inp, minus_prior(dinp), objective).worst, kTolerance);
  EXPECT_LT(fd_check("layernorm dweight", weight, minus_prior(dweight), objective).worst,
            kTolerance);
  EXPECT_LT(fd_check("layernorm dbias", bias, minus_prior(dbias), objective).worst, kTolerance);
}

TEST(Layers, MatmulBackwardMatchesFiniteDifferences) {
  const std::size_t BT = 5, C = 6, OC = 7;
  auto inp = random_vector(BT * C, 8, 1.0), weight = random_vector(OC * C, 9, 1.0);
  auto bias = random_vector(OC, 10, 1.0);
  const auto probe = random_vector(BT * OC, 11, 1.0);
  std::vector<float> out(BT * OC);
  for (bool with_bias : {true, false}) {
    SCOPED_TRACE(with_bias ? "with bias" : "without bias");
    const float* b = with_bias ? bias.data() : nullptr;
    auto objective = [&] {
      matmul_forward(out.data(), inp.data(), weight.data(), b, BT, C, OC);
      return probe_dot(out, probe);
    };
    objective();
    // out = inp @ weight^T + bias, element by element.
    for (std::size_t i = 0; i < BT; ++i) {
      for (std::size_t o = 0; o < OC; ++o) {
        double s = with_bias ? bias[o] : 0.0;
        for (std::size_t c = 0; c < C; ++c) s += double{inp[i * C + c]} * weight[o * C + c];
        EXPECT_NEAR(out[i * OC + o], s, 1e-5);
      }
    }
    std::vector<float> dinp(BT * C, kNaN), dweight(OC * C, kPrior), dbias(OC, kPrior);
    matmul_backward(dinp.data(), dweight.data(), with_bias ? dbias.data() : nullptr, probe.data(),
                    inp.data(), weight.data(), BT, C, OC);
    EXPECT_LT(fd_check("matmul dinp", inp, dinp, objective).worst, kTolerance);
    EXPECT_LT(fd_check("matmul dweight", weight, minus_prior(dweight), objective).worst,
              kTolerance);
    if (with_bias) {
      EXPECT_LT(fd_check("matmul dbias", bias, minus_prior(dbias), objective).worst, kTolerance);
    }
  }
}

TEST(Layers, AttentionBackwardMatchesFiniteDifferences) {
  const std::size_t B = 2, T = 5, C = 8, NH = 2;
  auto inp = random_vector(B * T * 3 * C, 12, 1.0);
  const auto probe = random_vector(B * T * C, 13, 1.0);
  std::vector<float> out(B * T * C), att(B * NH * T * T);
  auto objective = [&] {
    attention_forward(out.data(), att.data(), inp.data(), B, T, C, NH);
    return probe_dot(out, probe);
  };
  objective();
  // Probabilities: rows sum to 1 over the past, zero in the future.
  for (std::size_t row = 0; row < B * NH * T; ++row) {
    const std::size_t t = row % T;
    double sum = 0;
    for (std::size_t t2 = 0; t2 < T; ++t2) {
      const float p = att[row * T + t2];
      if (t2 > t) {
        EXPECT_EQ(p, 0.0f);
      }
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  // Causality: changing position T-1's k and v leaves every earlier output as it was.
  const std::vector<float> before = out;
  for (std::size_t j = C; j < 3 * C; ++j) inp[((B - 1) * T + T - 1) * 3 * C + j] += 1.0f;
  objective();
  for (std::size_t t = 0; t + 1 < T; ++t) {
    for (std::size_t c = 0; c < C; ++c) {
      const std::size_t i = ((B - 1) * T + t) * C + c;
      EXPECT_EQ(out[i], before[i]);
    }
  }
  objective();
  std::vector<float> dinp(B * T * 3 * C, kNaN), scratch(T * T, kNaN);
  attention_backward(dinp.data(), scratch.data(), probe.data(), inp.data(), att.data(), B, T, C,
                     NH);
  EXPECT_LT(fd_check("attention dinp (q, k, v)", inp, dinp, objective).worst, kTolerance);
}

// Past one block of queries (the layer skips the future a block at a time): forward and
// backward against the textbook formulas, looped in double.
TEST(Layers, AttentionOverSeveralBlocksMatchesTheFormulas) {
  const std::size_t B = 2, T = 150, C = 8, NH = 2, HS = C / NH, C3 = 3 * C;
  const auto inp = random_vector(B * T * C3, 30, 1.0);
  const auto dout = random_vector(B * T * C, 31, 1.0);
  std::vector<float> out(B * T * C), att(B * NH * T * T), dinp(B * T * C3, kNaN),
      scratch(T * T, kNaN);
  attention_forward(out.data(), att.data(), inp.data(), B, T, C, NH);
  attention_backward(dinp.data(), scratch.data(), dout.data(), inp.data(), att.data(), B, T, C, NH);
  std::vector<double> want_dinp(B * T * C3, 0.0);
  double worst_out = 0, worst_att = 0, worst_dinp = 0;
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < NH; ++h) {
      auto q = [&](std::size_t t, std::size_t d) {
        return double{inp[(b * T + t) * C3 + h * HS + d]};
      };
      auto k = [&](std::size_t t, std::size_t d) {
        return double{inp[(b * T + t) * C3 + C + h * HS + d]};
      };
      auto v = [&](std::size_t t, std::size_t d) {
        return double{inp[(b * T + t) * C3 + 2 * C + h * HS + d]};
      };
      for (std::size_t t = 0; t < T; ++t) {
        std::vector<double> p(t + 1);
        double mx = -1e300, sum = 0;
        for (std::size_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (std::size_t d = 0; d < HS; ++d) dot += q(t, d) * k(s, d);
          p[s] = dot / std::sqrt(double(HS));
          mx = std::max(mx, p[s]);
        }
        for (auto& x : p) sum += (x = std::exp(x - mx));
        for (auto& x : p) x /= sum;
        const float* a = att.data() + ((b * NH + h) * T + t) * T;
        for (std::size_t s = 0; s < T; ++s) {
          worst_att = std::max(worst_att, std::fabs(a[s] - (s <= t ? p[s] : 0.0)));
        }
        // out = p v; dp = dout v^T; dscore = p (dp - sum p dp) / sqrt(HS).
        std::vector<double> dp(t + 1, 0.0);
        for (std::size_t d = 0; d < HS; ++d) {
          double o = 0;
          const double g = dout[(b * T + t) * C + h * HS + d];
          for (std::size_t s = 0; s <= t; ++s) {
            o += p[s] * v(s, d);
            dp[s] += g * v(s, d);
            want_dinp[(b * T + s) * C3 + 2 * C + h * HS + d] += p[s] * g;
          }
          worst_out = std::max(worst_out, std::fabs(out[(b * T + t) * C + h * HS + d] - o));
        }
        double dot = 0;
        for (std::size_t s = 0; s <= t; ++s) dot += p[s] * dp[s];
        for (std::size_t s = 0; s <= t; ++s) {
          const double ds = p[s] * (dp[s] - dot) / std::sqrt(double(HS));
          for (std::size_t d = 0; d < HS; ++d) {
            want_dinp[(b * T + t) * C3 + h * HS + d] += ds * k(s, d);
            want_dinp[(b * T + s) * C3 + C + h * HS + d] += ds * q(t, d);
          }
        }
      }
    }
  }
  for (std::size_t i = 0; i < dinp.size(); ++i) {
    worst_dinp = std::max(worst_dinp, std::fabs(dinp[i] - want_dinp[i]));
  }
  std::printf("  T = %zu: worst |error| out %.2e, att %.2e, dinp %.2e\n", T, worst_out, worst_att,
              worst_dinp);
  EXPECT_LT(worst_out, 1e-5);
  EXPECT_LT(worst_att, 1e-6);
  EXPECT_LT(worst_dinp, 1e-5);
}

TEST(Layers, GeluBackwardMatchesFiniteDifferences) {
  const std::size_t N = 41;
  std::vector<float> inp(N);
  for (std::size_t i = 0; i < N; ++i) inp[i] = -5.0f + 0.25f * static_cast<float>(i) + 0.01f;
  const auto probe = random_vector(N, 14, 1.0);
  std::vector<float> out(N);
  auto objective = [&] {
    gelu_forward(out.data(), inp.data(), N);
    return probe_dot(out, probe);
  };
  objective();
  for (std::size_t i = 0; i < N; ++i) {  // GPT-2's formula, in double with libm's tanh
    const double x = inp[i];
    const double ref = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(out[i], ref, 2e-7 * std::max(1.0, std::fabs(x)));
  }
  std::vector<float> dinp(N, kNaN);
  gelu_backward(dinp.data(), inp.data(), probe.data(), N);
  EXPECT_LT(fd_check("gelu dinp", inp, dinp, objective).worst, kTolerance);
}

// The pair the GPT uses: the same bits as gelu_forward and gelu_backward, in place, with the
// bias gradient of matmul_backward (rows added in order) on the side.
TEST(Layers, GeluWithKeptSlopeIsTheSameBits) {
  const std::size_t BT = 5, OC = 19, N = BT * OC;
  const auto inp = random_vector(N, 15, 3.0), dout = random_vector(N, 16, 1.0);
  std::vector<float> out(N), ref_out(N), ref_dinp(N);
  gelu_forward(ref_out.data(), inp.data(), N);
  gelu_backward(ref_dinp.data(), inp.data(), dout.data(), N);
  std::vector<float> ref_dbias(OC, 0.5f);
  for (std::size_t i = 0; i < BT; ++i) {
    for (std::size_t o = 0; o < OC; ++o) ref_dbias[o] += ref_dinp[i * OC + o];
  }
  std::vector<float> slope = inp, d = dout, dbias(OC, 0.5f);
  gelu_forward_keep_slope(out.data(), slope.data(), slope.data(), N);
  gelu_backward_from_slope(d.data(), dbias.data(), slope.data(), d.data(), BT, OC);
  EXPECT_EQ(std::memcmp(out.data(), ref_out.data(), N * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(d.data(), ref_dinp.data(), N * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(dbias.data(), ref_dbias.data(), OC * sizeof(float)), 0);
}

// The residual connection after a projection: residual + (inp @ W^T + bias), by one GEMM that
// accumulates into the residual. Its backward is matmul_backward plus the residual stream's
// gradient passing through, which the whole model's finite-difference test covers.
TEST(Layers, MatmulResidualForwardAddsTheResidual) {
  const std::size_t BT = 5, C = 6, OC = 7;
  const auto inp = random_vector(BT * C, 12, 1.0), weight = random_vector(OC * C, 13, 1.0);
  const auto bias = random_vector(OC, 14, 1.0), residual = random_vector(BT * OC, 15, 1.0);
  std::vector<float> out(BT * OC), projection(BT * OC);
  matmul_residual_forward(out.data(), residual.data(), inp.data(), weight.data(), bias.data(), BT,
                          C, OC);
  matmul_forward(projection.data(), inp.data(), weight.data(), bias.data(), BT, C, OC);
  for (std::size_t i = 0; i < BT * OC; ++i) {
    // The same terms summed in another order: equal up to a few roundings.
    EXPECT_NEAR(out[i], residual[i] + projection[i], 1e-5f) << i;
  }
}

TEST(Layers, CrossEntropySoftmaxBackwardMatchesFiniteDifferences) {
  const std::size_t BT = 4, V = 7;
  auto logits = random_vector(BT * V, 18, 2.0);
  logits[3] = 60.0f;  // a large logit: the max subtraction keeps exp finite
  const std::vector<std::uint8_t> targets = {0, 6, 3, 3};
  std::vector<float> probs(BT * V), losses(BT);
  const float dloss = 0.375f;
  auto objective = [&] {
    crossentropy_softmax_forward(probs.data(), losses.data(), logits.data(), targets.data(), BT, V);
    double s = 0;
    for (float l : losses) s += dloss * double{l};
    return s;
  };
  objective();
  for (std::size_t i = 0; i < BT; ++i) {
    double m = -1e300, z = 0;
    for (std::size_t v = 0; v < V; ++v) m = std::max(m, double{logits[i * V + v]});
    for (std::size_t v = 0; v < V; ++v) z += std::exp(double{logits[i * V + v]} - m);
    EXPECT_NEAR(losses[i], std::log(z) - (logits[i * V + targets[i]] - m), 2e-6);
    EXPECT_TRUE(std::isfinite(losses[i]));
  }
  std::vector<float> dlogits(BT * V, kNaN);
  crossentropy_softmax_backward(dlogits.data(), probs.data(), targets.data(), dloss, BT, V);
  EXPECT_LT(fd_check("crossentropy dlogits", logits, dlogits, objective).worst, kTolerance);
}

TEST(SimdMath, ExpAndSigmoidAreCloseToLibm) {
  double worst_exp = 0, worst_sigmoid = 0;
  for (float x = -87.0f; x < 88.0f; x += 0.0137f) {
    const double ref = std::exp(double{x});
    worst_exp = std::max(worst_exp, std::fabs(exp_approx(x) - ref) / ref);
  }
  for (float x = -80.0f; x < 80.0f; x += 0.00137f) {
    const double ref = 1.0 / (1.0 + std::exp(-double{x}));
    worst_sigmoid = std::max(worst_sigmoid, std::fabs(sigmoid_approx(x) - ref) / ref);
  }
  std::printf("  exp_approx worst relative error %.2e, sigmoid_approx %.2e\n", worst_exp,
              worst_sigmoid);
  EXPECT_LT(worst_exp, 3e-7);
  EXPECT_LT(worst_sigmoid, 3e-7);
  EXPECT_EQ(exp_approx(-100.0f), 0.0f);
  EXPECT_EQ(exp_approx(0.0f), 1.0f);
  EXPECT_TRUE(std::isfinite(exp_approx(1000.0f)));
}

TEST(SimdMath, LaneReductionsCoverEveryElement) {
  for (std::size_t n : {1u, 7u, 8u, 9u, 17u, 64u}) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7) % 11);
    v[n / 2] = 100.0f;
    double sum = 0;
    for (float x : v) sum += x;
    EXPECT_EQ(lane_sum(n, [&](std::size_t i) { return v[i]; }), static_cast<float>(sum));
    EXPECT_EQ(lane_max(n, v.data()), 100.0f);
  }
}

}  // namespace
}  // namespace zerodp::model

// Every layer's backward against central finite differences of its forward, in fp32, on tiny
// shapes. The objective is sum(out * probe) for a random probe, so d objective / d out = probe
// is what each backward receives. Outputs a backward WRITES are pre-filled with NaN (a missed
// element would show); outputs it ADDS into are pre-filled with a constant that is subtracted
// again (a write instead of an add would show).
#include "zerodp/model/layers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "model/finite_difference.h"
#include "model/simd_math.h"
#include "testing/tolerance.h"

namespace zerodp::model {
namespace {

using testing::fd_check;
using testing::FdOptions;
using testing::probe_dot;
using testing::random_vector;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kPrior = 0.25f;  // what "added into" buffers hold before a backward
using tolerance::gamma;
constexpr double u = tolerance::kUnitRoundoff;
// exp_approx's and sigmoid_approx's relative error: 5 u, their polynomial's own error (under u)
// plus four roundings of terms no larger than the result; SimdMath.ExpAndSigmoidAreCloseToLibm
// checks it.
constexpr double kApproxError = 3e-7;

// The probe objective sum(out * probe), summed in double, is off by at most sum |probe_i| *
// out_error_i when each out_i is off by at most out_error_i (the double sum's own rounding,
// 2^-53 per term, is 2^29 times smaller and left out). fd_check's objective_error.
double probe_error(std::span<const float> probe, const std::vector<double>& out_error) {
  double e = 0.0;
  for (std::size_t i = 0; i < probe.size(); ++i) e += std::fabs(double{probe[i]}) * out_error[i];
  return e;
}

// out = inp @ weight^T (+ bias): each element a sum of C products (and the bias), off by at
// most gamma(C + 1) (sum_c |inp_c weight_c| + |bias|).
std::vector<double> matmul_error(const std::vector<float>& inp, const std::vector<float>& weight,
                                 const float* bias, std::size_t BT, std::size_t C, std::size_t OC) {
  std::vector<double> e(BT * OC);
  for (std::size_t i = 0; i < BT; ++i) {
    for (std::size_t o = 0; o < OC; ++o) {
      double terms = bias != nullptr ? std::fabs(bias[o]) : 0.0;
      for (std::size_t c = 0; c < C; ++c) terms += std::fabs(inp[i * C + c] * weight[o * C + c]);
      e[i * OC + o] = gamma(C + 1) * terms;
    }
  }
  return e;
}

// LayerNorm's rounding, to first order, row by row: mean m = sum(x) / C is off by dm =
// gamma(C + 1) mean|x|; d = x - m by dm + u |d|; v = sum(d^2) / C by 2 sqrt(v) dm + gamma(C + 3) v
// (sum(d dd) <= sum|d| dm + u sum d^2, sum|d| <= C sqrt(v)); rstd s = 1 / sqrt(v + eps)
// relatively by dv / (2 (v + eps)) + 3 u; out = (s d) w + b by |w| dxhat + 2 u |xhat w| + u |b|.
struct LayerNormError {
  std::vector<double> mean, rstd, out;
};
LayerNormError layernorm_error(const std::vector<float>& inp, const std::vector<float>& weight,
                               const std::vector<float>& bias, std::size_t BT, std::size_t C) {
  LayerNormError e{std::vector<double>(BT), std::vector<double>(BT), std::vector<double>(BT * C)};
  for (std::size_t i = 0; i < BT; ++i) {
    const float* x = inp.data() + i * C;
    double m = 0, mean_abs = 0, v = 0;
    for (std::size_t c = 0; c < C; ++c) m += x[c], mean_abs += std::fabs(x[c]);
    m /= C, mean_abs /= C;
    for (std::size_t c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    v /= C;
    const double s = 1.0 / std::sqrt(v + 1e-5);
    const double dm = gamma(C + 1) * mean_abs;
    const double dv = 2.0 * std::sqrt(v) * dm + gamma(C + 3) * v;
    const double ds = s * (dv / (2.0 * (v + 1e-5)) + 3.0 * u);
    e.mean[i] = dm;
    e.rstd[i] = ds;
    for (std::size_t c = 0; c < C; ++c) {
      const double d = std::fabs(x[c] - m), xhat_w = s * d * std::fabs(weight[c]);
      const double dxhat = s * (dm + u * d) + d * ds + u * s * d;
      e.out[i * C + c] = std::fabs(weight[c]) * dxhat + 2.0 * u * xhat_w + u * std::fabs(bias[c]);
    }
  }
  return e;
}

// Attention's rounding, to first order, per (sample, head, query) row of n = t + 1 keys: a
// score z = scale q.k is off by dz = gamma(HS + 2) scale sum|q k| (HS products, the scale and
// its rounding); an exponent z - max by E = 2 max dz + u max|z - max|; a probability p
// relatively by rel_p = 2 E + 2 kApproxError + gamma(n + 2) (its exponential, the sum of the
// row's and their reciprocal); out = sum p v by (gamma(n) + rel_p) sum p |v|.
struct AttentionError {
  std::vector<double> rel_p;  // [B, NH, T]
  std::vector<double> out;    // [B, T, C]
};
AttentionError attention_error(const std::vector<float>& inp, std::size_t B, std::size_t T,
                               std::size_t C, std::size_t NH) {
  const std::size_t HS = C / NH, C3 = 3 * C;
  const double scale = 1.0 / std::sqrt(double(HS));
  AttentionError e{std::vector<double>(B * NH * T), std::vector<double>(B * T * C)};
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < NH; ++h) {
      const float* q = inp.data() + b * T * C3 + h * HS;
      const float* k = q + C;
      const float* v = q + 2 * C;
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t n = t + 1;
        std::vector<double> z(n), dz(n), p(n);
        for (std::size_t s = 0; s < n; ++s) {
          double dot = 0, abs = 0;
          for (std::size_t d = 0; d < HS; ++d) {
            dot += double{q[t * C3 + d]} * k[s * C3 + d];
            abs += std::fabs(double{q[t * C3 + d]} * k[s * C3 + d]);
          }
          z[s] = scale * dot;
          dz[s] = gamma(HS + 2) * scale * abs;
        }
        const double zmax = *std::max_element(z.begin(), z.end());
        double sum = 0, E = 0;
        for (std::size_t s = 0; s < n; ++s) {
          sum += (p[s] = std::exp(z[s] - zmax));
          E = std::max(E, u * std::fabs(z[s] - zmax));
        }
        E += 2.0 * *std::max_element(dz.begin(), dz.end());
        const double rel_p = 2.0 * E + 2.0 * kApproxError + gamma(n + 2);
        e.rel_p[(b * NH + h) * T + t] = rel_p;
        for (std::size_t d = 0; d < HS; ++d) {
          double abs = 0;
          for (std::size_t s = 0; s < n; ++s) abs += p[s] / sum * std::fabs(v[s * C3 + d]);
          e.out[(b * T + t) * C + h * HS + d] = (gamma(n) + rel_p) * abs;
        }
      }
    }
  }
  return e;
}

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
  // out = wte + wpe, one rounding: off by at most u (|wte| + |wpe|).
  std::vector<double> out_error(B * T * C);
  for (std::size_t i = 0; i < B * T; ++i) {
    for (std::size_t c = 0; c < C; ++c) {
      out_error[i * C + c] = u * (std::fabs(wte[inp[i] * C + c]) + std::fabs(wpe[i % T * C + c]));
    }
  }
  const FdOptions fd{.objective_error = probe_error(probe, out_error)};
  EXPECT_LT(fd_check("encoder dwte", wte, minus_prior(dwte), objective, fd).worst, 1.0);
  EXPECT_LT(fd_check("encoder dwpe", wpe, minus_prior(dwpe), objective, fd).worst, 1.0);
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
  // Statistics of the forward, within their rounding (layernorm_error).
  const LayerNormError error = layernorm_error(inp, weight, bias, BT, C);
  for (std::size_t i = 0; i < BT; ++i) {
    double m = 0, v = 0;
    for (std::size_t c = 0; c < C; ++c) m += inp[i * C + c];
    m /= C;
    for (std::size_t c = 0; c < C; ++c) v += (inp[i * C + c] - m) * (inp[i * C + c] - m);
    EXPECT_NEAR(mean[i], m, error.mean[i]);
    EXPECT_NEAR(rstd[i], 1.0 / std::sqrt(v / C + 1e-5), error.rstd[i]);
  }
  const FdOptions fd{.objective_error = probe_error(probe, error.out)};
  EXPECT_LT(fd_check("layernorm dinp", inp, minus_prior(dinp), objective, fd).worst, 1.0);
  EXPECT_LT(fd_check("layernorm dweight", weight, minus_prior(dweight), objective, fd).worst, 1.0);
  EXPECT_LT(fd_check("layernorm dbias", bias, minus_prior(dbias), objective, fd).worst, 1.0);
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
    // out = inp @ weight^T + bias, element by element, within its rounding.
    const std::vector<double> error = matmul_error(inp, weight, b, BT, C, OC);
    for (std::size_t i = 0; i < BT; ++i) {
      for (std::size_t o = 0; o < OC; ++o) {
        double s = with_bias ? bias[o] : 0.0;
        for (std::size_t c = 0; c < C; ++c) s += double{inp[i * C + c]} * weight[o * C + c];
        EXPECT_NEAR(out[i * OC + o], s, error[i * OC + o]);
      }
    }
    const FdOptions fd{.objective_error = probe_error(probe, error)};
    std::vector<float> dinp(BT * C, kNaN), dweight(OC * C, kPrior), dbias(OC, kPrior);
    matmul_backward(dinp.data(), dweight.data(), with_bias ? dbias.data() : nullptr, probe.data(),
                    inp.data(), weight.data(), BT, C, OC);
    EXPECT_LT(fd_check("matmul dinp", inp, dinp, objective, fd).worst, 1.0);
    EXPECT_LT(fd_check("matmul dweight", weight, minus_prior(dweight), objective, fd).worst, 1.0);
    if (with_bias) {
      EXPECT_LT(fd_check("matmul dbias", bias, minus_prior(dbias), objective, fd).worst, 1.0);
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
  const AttentionError error = attention_error(inp, B, T, C, NH);
  // Probabilities: rows sum to 1 over the past (each p within rel_p of its value), zero in the
  // future.
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
    EXPECT_NEAR(sum, 1.0, error.rel_p[row]);
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
  // The objective's rounding at the inputs the check perturbs (the causality check above
  // changed some). h = 4e-2: attention's worst-case rounding is the largest of the layers',
  // and its term falls as 1 / h while the truncation term, measured, stays far below it.
  const FdOptions fd{.h = 4e-2f,
                     .objective_error = probe_error(probe, attention_error(inp, B, T, C, NH).out)};
  EXPECT_LT(fd_check("attention dinp (q, k, v)", inp, dinp, objective, fd).worst, 1.0);
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
  // The rounding of out and att: attention_error. Of dinp, to first order: every quantity of
  // the backward is off by at most (gamma(K) + 2 rel_p) times the same quantity computed from
  // absolute values (dp from |dout| |v|, dscore from p (|dp| + |dot|), ...), with K = HS + 2 T
  // + 5 roundings along the longest chain (dp: HS, the row's dot: T, dscore: 3 and the scale's
  // 2, dq or dk: T) and p entering it twice (in dscore and in the dot).
  const AttentionError error = attention_error(inp, B, T, C, NH);
  const double rel_p = *std::max_element(error.rel_p.begin(), error.rel_p.end());
  std::vector<double> abs_dinp(B * T * C3, 0.0);
  double worst_out = 0, worst_att = 0, worst_dinp = 0;  // |error| / bound
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
        const double row_rel_p = error.rel_p[(b * NH + h) * T + t];
        for (std::size_t s = 0; s < T; ++s) {
          if (s > t) {
            EXPECT_EQ(a[s], 0.0f);
          } else {
            worst_att = std::max(worst_att, std::fabs(a[s] - p[s]) / (row_rel_p * p[s]));
          }
        }
        // out = p v; dp = dout v^T; dscore = p (dp - sum p dp) / sqrt(HS).
        std::vector<double> dp(t + 1, 0.0), abs_dp(t + 1, 0.0);
        for (std::size_t d = 0; d < HS; ++d) {
          double o = 0;
          const double g = dout[(b * T + t) * C + h * HS + d];
          for (std::size_t s = 0; s <= t; ++s) {
            o += p[s] * v(s, d);
            dp[s] += g * v(s, d);
            abs_dp[s] += std::fabs(g * v(s, d));
            want_dinp[(b * T + s) * C3 + 2 * C + h * HS + d] += p[s] * g;
            abs_dinp[(b * T + s) * C3 + 2 * C + h * HS + d] += p[s] * std::fabs(g);
          }
          const std::size_t i = (b * T + t) * C + h * HS + d;
          worst_out = std::max(worst_out, std::fabs(out[i] - o) / error.out[i]);
        }
        double dot = 0, abs_dot = 0;
        for (std::size_t s = 0; s <= t; ++s) dot += p[s] * dp[s], abs_dot += p[s] * abs_dp[s];
        for (std::size_t s = 0; s <= t; ++s) {
          const double ds = p[s] * (dp[s] - dot) / std::sqrt(double(HS));
          const double abs_ds = p[s] * (abs_dp[s] + abs_dot) / std::sqrt(double(HS));
          for (std::size_t d = 0; d < HS; ++d) {
            want_dinp[(b * T + t) * C3 + h * HS + d] += ds * k(s, d);
            want_dinp[(b * T + s) * C3 + C + h * HS + d] += ds * q(t, d);
            abs_dinp[(b * T + t) * C3 + h * HS + d] += abs_ds * std::fabs(k(s, d));
            abs_dinp[(b * T + s) * C3 + C + h * HS + d] += abs_ds * std::fabs(q(t, d));
          }
        }
      }
    }
  }
  const double dinp_rel = gamma(HS + 2 * T + 5) + 2 * rel_p;
  for (std::size_t i = 0; i < dinp.size(); ++i) {
    worst_dinp = std::max(worst_dinp, std::fabs(dinp[i] - want_dinp[i]) / (dinp_rel * abs_dinp[i]));
  }
  std::printf("  T = %zu: worst |error| / bound out %.2e, att %.2e, dinp %.2e\n", T, worst_out,
              worst_att, worst_dinp);
  EXPECT_LT(worst_out, 1.0);
  EXPECT_LT(worst_att, 1.0);
  EXPECT_LT(worst_dinp, 1.0);
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
  // GPT-2's formula, in double with libm's tanh. The code computes x sigmoid(a), a = 2 sqrt(2/pi)
  // (x + 0.044715 x^3): a's terms have one sign, so a is off by gamma(8) |a| (five roundings and
  // the two constants' own); sigmoid(a) then by s (1 - s) gamma(8) |a| + kApproxError s; the
  // product by u |x s| more.
  std::vector<double> out_error(N);
  for (std::size_t i = 0; i < N; ++i) {
    const double x = inp[i];
    const double a = 2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    const double s = 1 / (1 + std::exp(-a));
    out_error[i] =
        std::fabs(x) * (s * (1 - s) * gamma(8) * std::fabs(a) + kApproxError * s + u * s);
    const double ref = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(out[i], ref, out_error[i]) << x;
  }
  std::vector<float> dinp(N, kNaN);
  gelu_backward(dinp.data(), inp.data(), probe.data(), N);
  const FdOptions fd{.objective_error = probe_error(probe, out_error)};
  EXPECT_LT(fd_check("gelu dinp", inp, dinp, objective, fd).worst, 1.0);
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
  // The same C + 2 terms (residual, bias, C products) summed in two orders: each within
  // gamma(C + 2) sum |terms| of the exact sum.
  const std::vector<double> error = matmul_error(inp, weight, bias.data(), BT, C, OC);
  for (std::size_t i = 0; i < BT * OC; ++i) {
    const double terms = error[i] / gamma(C + 1) + std::fabs(residual[i]);
    EXPECT_NEAR(out[i], residual[i] + projection[i], 2 * gamma(C + 2) * terms) << i;
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
  // loss = log(sum) - (z_target - max): the sum of V exponentials (one sign) is off relatively
  // by gamma(V) + kApproxError + u max|z - max| (their arguments' rounding), which log turns
  // into as much absolutely; log (1 ulp), the subtraction and the final one add 2 u |log sum|
  // + u |z_target - max| + u |loss|.
  double objective_error = 0;
  for (std::size_t i = 0; i < BT; ++i) {
    double m = -1e300, z = 0;
    for (std::size_t v = 0; v < V; ++v) m = std::max(m, double{logits[i * V + v]});
    double spread = 0;
    for (std::size_t v = 0; v < V; ++v) {
      z += std::exp(double{logits[i * V + v]} - m);
      spread = std::max(spread, m - logits[i * V + v]);
    }
    const double want = std::log(z) - (logits[i * V + targets[i]] - m);
    const double error = gamma(V) + kApproxError + u * spread + 2 * u * std::log(z) +
                         u * (m - logits[i * V + targets[i]]) + u * std::fabs(want);
    EXPECT_NEAR(losses[i], want, error);
    EXPECT_TRUE(std::isfinite(losses[i]));
    objective_error += dloss * error;
  }
  std::vector<float> dlogits(BT * V, kNaN);
  crossentropy_softmax_backward(dlogits.data(), probs.data(), targets.data(), dloss, BT, V);
  EXPECT_LT(fd_check("crossentropy dlogits", logits, dlogits, objective,
                     {.objective_error = objective_error})
                .worst,
            1.0);
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
  EXPECT_LT(worst_exp, kApproxError);
  EXPECT_LT(worst_sigmoid, kApproxError);
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

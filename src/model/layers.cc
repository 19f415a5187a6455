#include "zerodp/model/layers.h"

#include <cmath>
#include <cstring>

#include "model/avx512.h"
#include "model/layer_variants.h"
#include "model/simd_math.h"
#include "zerodp/common/error.h"
#include "zerodp/model/gemm.h"

namespace zerodp::model {

void encoder_forward(float* out, const std::uint8_t* inp, const float* wte, const float* wpe,
                     std::size_t B, std::size_t T, std::size_t C) {
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      float* out_bt = out + (b * T + t) * C;
      const float* wte_ix = wte + std::size_t{inp[b * T + t]} * C;
      const float* wpe_t = wpe + t * C;
      for (std::size_t c = 0; c < C; ++c) out_bt[c] = wte_ix[c] + wpe_t[c];
    }
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::uint8_t* inp,
                      std::size_t B, std::size_t T, std::size_t C) {
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const float* dout_bt = dout + (b * T + t) * C;
      float* dwte_ix = dwte + std::size_t{inp[b * T + t]} * C;
      float* dwpe_t = dwpe + t * C;
      for (std::size_t c = 0; c < C; ++c) dwte_ix[c] += dout_bt[c];
      for (std::size_t c = 0; c < C; ++c) dwpe_t[c] += dout_bt[c];
    }
  }
}

namespace {
constexpr float kLayerNormEps = 1e-5f;
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, std::size_t BT, std::size_t C) {
  for (std::size_t i = 0; i < BT; ++i) {
    const float* x = inp + i * C;
    const float m = lane_sum(C, [x](std::size_t c) { return x[c]; }) / static_cast<float>(C);
    const float v = lane_sum(C, [x, m](std::size_t c) { return (x[c] - m) * (x[c] - m); }) /
                    static_cast<float>(C);
    const float s = 1.0f / std::sqrt(v + kLayerNormEps);
    float* o = out + i * C;
    for (std::size_t c = 0; c < C; ++c) o[c] = (s * (x[c] - m)) * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

// __restrict: six streams are more than GCC checks for overlap at run time, and without
// them the loop is left scalar.
void layernorm_backward(float* __restrict dinp, float* __restrict dweight, float* __restrict dbias,
                        const float* __restrict dout, const float* __restrict inp,
                        const float* __restrict weight, const float* mean, const float* rstd,
                        std::size_t BT, std::size_t C) {
  for (std::size_t i = 0; i < BT; ++i) {
    const float* dy = dout + i * C;
    const float* x = inp + i * C;
    float* dx = dinp + i * C;
    const float m = mean[i], s = rstd[i];
    // The two reductions of the backward: mean of (w * dy) and of (w * dy * xhat).
    const float dnorm_mean =
        lane_sum(C, [=](std::size_t c) { return weight[c] * dy[c]; }) / static_cast<float>(C);
    const float dnorm_norm_mean =
        lane_sum(C, [=](std::size_t c) { return weight[c] * dy[c] * ((x[c] - m) * s); }) /
        static_cast<float>(C);
    if (dweight == nullptr) {  // a frozen norm: the input's gradient alone, the same bits
      for (std::size_t c = 0; c < C; ++c) {
        const float xhat = (x[c] - m) * s;
        const float dnorm = weight[c] * dy[c];
        dx[c] += ((dnorm - dnorm_mean) - xhat * dnorm_norm_mean) * s;
      }
      continue;
    }
    for (std::size_t c = 0; c < C; ++c) {
      const float xhat = (x[c] - m) * s;
      const float dnorm = weight[c] * dy[c];
      dbias[c] += dy[c];
      dweight[c] += xhat * dy[c];
      dx[c] += ((dnorm - dnorm_mean) - xhat * dnorm_norm_mean) * s;
    }
  }
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    std::size_t BT, std::size_t C, std::size_t OC, const GemmCompute& how) {
  if (bias != nullptr) {
    for (std::size_t i = 0; i < BT; ++i) std::memcpy(out + i * OC, bias, OC * sizeof(float));
  }
  gemm(how, Trans::no, Trans::yes, BT, OC, C, 1.0f, inp, weight, bias != nullptr ? 1.0f : 0.0f,
       out);
}

void matmul_residual_forward(float* out, const float* residual, const float* inp,
                             const float* weight, const float* bias, std::size_t BT, std::size_t C,
                             std::size_t OC, const GemmCompute& how) {
  for (std::size_t i = 0; i < BT; ++i) {
    const float* r = residual + i * OC;
    float* o = out + i * OC;
    for (std::size_t c = 0; c < OC; ++c) o[c] = r[c] + bias[c];
  }
  gemm(how, Trans::no, Trans::yes, BT, OC, C, 1.0f, inp, weight, 1.0f, out);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, std::size_t BT, std::size_t C, std::size_t OC,
                     const GemmCompute& how) {
  gemm(how, Trans::no, Trans::no, BT, C, OC, 1.0f, dout, OC, weight, C, 0.0f, dinp, C);  // dout W
  if (dweight == nullptr) return;  // a frozen weight (and its bias)
  // += dout^T inp: the same stored dout, whose rounding the product above left in the scratch.
  gemm(how, Trans::yes, Trans::no, OC, C, BT, 1.0f, dout, OC, inp, C, 1.0f, dweight, C, Reuse::a);
  if (dbias != nullptr) {
    for (std::size_t i = 0; i < BT; ++i) {
      const float* dout_i = dout + i * OC;
      for (std::size_t o = 0; o < OC; ++o) dbias[o] += dout_i[o];
    }
  }
}

void lora_forward(float* out, float* u, const float* inp, const float* A, const float* B,
                  float scale, std::size_t BT, std::size_t IN, std::size_t OUT, std::size_t R,
                  const GemmCompute& how) {
  gemm(how, Trans::no, Trans::yes, BT, R, IN, 1.0f, inp, A, 0.0f, u);
  gemm(how, Trans::no, Trans::yes, BT, OUT, R, scale, u, B, 1.0f, out);
}

void lora_backward(float* dinp, float* dA, float* dB, float* du, const float* dout,
                   const float* inp, const float* u, const float* A, const float* B, float scale,
                   std::size_t BT, std::size_t IN, std::size_t OUT, std::size_t R,
                   const GemmCompute& how) {
  gemm(how, Trans::yes, Trans::no, OUT, R, BT, scale, dout, u, 1.0f, dB);
  gemm(how, Trans::no, Trans::no, BT, R, OUT, scale, dout, B, 0.0f, du);
  gemm(how, Trans::yes, Trans::no, R, IN, BT, 1.0f, du, inp, 1.0f, dA);
  gemm(how, Trans::no, Trans::no, BT, IN, R, 1.0f, du, A, 1.0f, dinp);
}

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCube = 0.044715f;

struct GeluAt {
  float value, slope;
};

// 0.5 (1 + tanh(u)) = sigmoid(2u): the same function as GPT-2's, evaluated without the
// cancellation of 1 + tanh(u) near tanh = -1 (which costs fp32 GELU its relative accuracy for
// x < -3). Callers that need one of the two leave the other to dead-code elimination.
inline GeluAt gelu_at(float x) {
  const float u = kGeluScale * (x + kGeluCube * x * x * x);
  const float s = sigmoid_approx(2.0f * u);
  const float du = kGeluScale * (1.0f + 3.0f * kGeluCube * x * x);
  // d/dx [x s(2u)] = s + x * 2 s (1 - s) du
  return {x * s, s + x * (2.0f * s * (1.0f - s)) * du};
}
}  // namespace

void gelu_forward(float* out, const float* inp, std::size_t N) {
  for (std::size_t i = 0; i < N; ++i) out[i] = gelu_at(inp[i]).value;
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t N) {
  for (std::size_t i = 0; i < N; ++i) dinp[i] = gelu_at(inp[i]).slope * dout[i];
}

// The forward's GELU is the largest elementwise pass of a step (an exponential per element of
// [B*T, 4C]): built twice, for the baseline and for AVX-512 (model/avx512.h), the same bits.
namespace {
inline void gelu_keep_slope_loop(float* out, float* slope, const float* inp, std::size_t N) {
  for (std::size_t i = 0; i < N; ++i) {
    const GeluAt g = gelu_at(inp[i]);
    out[i] = g.value;
    slope[i] = g.slope;
  }
}
}  // namespace

void gelu_forward_keep_slope_baseline(float* out, float* slope, const float* inp, std::size_t N) {
  gelu_keep_slope_loop(out, slope, inp, N);
}

#if ZERODP_HAVE_AVX512_VARIANTS
ZERODP_AVX512 void gelu_forward_keep_slope_avx512(float* out, float* slope, const float* inp,
                                                  std::size_t N) {
  gelu_keep_slope_loop(out, slope, inp, N);
}
#else
void gelu_forward_keep_slope_avx512(float*, float*, const float*, std::size_t) {
  ZERODP_CHECK_MSG(false, "gelu_forward_keep_slope_avx512: not built for this target");
}
#endif

void gelu_forward_keep_slope(float* out, float* slope, const float* inp, std::size_t N) {
  if (cpu_runs_avx512()) {
    gelu_forward_keep_slope_avx512(out, slope, inp, N);
  } else {
    gelu_forward_keep_slope_baseline(out, slope, inp, N);
  }
}

void gelu_backward_from_slope(float* dinp, float* __restrict dbias, const float* __restrict slope,
                              const float* dout, std::size_t BT, std::size_t OC) {
  for (std::size_t i = 0; i < BT; ++i) {
    float* dx = dinp + i * OC;
    const float* s = slope + i * OC;
    const float* dy = dout + i * OC;
    if (dbias == nullptr) {  // a frozen bias
      for (std::size_t o = 0; o < OC; ++o) dx[o] = s[o] * dy[o];
      continue;
    }
    for (std::size_t o = 0; o < OC; ++o) {
      dx[o] = s[o] * dy[o];
      dbias[o] += dx[o];
    }
  }
}

void crossentropy_softmax_forward(float* probs, float* losses, const float* logits,
                                  const std::uint8_t* targets, std::size_t BT, std::size_t V) {
  for (std::size_t i = 0; i < BT; ++i) {
    const float* z = logits + i * V;
    float* p = probs + i * V;
    const float maxz = lane_max(V, z);
    for (std::size_t v = 0; v < V; ++v) p[v] = exp_approx(z[v] - maxz);
    const float sum = lane_sum(V, [p](std::size_t v) { return p[v]; });
    const float inv = 1.0f / sum;
    for (std::size_t v = 0; v < V; ++v) p[v] *= inv;
    // -log(p[target]) without the rounding of p: log(sum) - (z[target] - max).
    losses[i] = std::log(sum) - (z[targets[i]] - maxz);
  }
}

void crossentropy_softmax_backward(float* dlogits, const float* probs, const std::uint8_t* targets,
                                   float dloss, std::size_t BT, std::size_t V) {
  for (std::size_t i = 0; i < BT; ++i) {
    const float* p = probs + i * V;
    float* dz = dlogits + i * V;
    for (std::size_t v = 0; v < V; ++v) dz[v] = p[v] * dloss;
    dz[targets[i]] = (p[targets[i]] - 1.0f) * dloss;
  }
}

}  // namespace zerodp::model

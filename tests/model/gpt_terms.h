// The magnitude of the sums behind every element of the GPT's parameter gradient, for tests
// whose tolerances are rounding-error bounds (testing/tolerance.h).
//
// Each parameter's gradient is a sum over the micro-batch's B T positions of terms a backward
// layer adds into it: dW += dy^T x (terms dy * x), dbias += rows of dy, LayerNorm's dweight +=
// xhat * dy, the embeddings += rows of the residual gradient. gpt_terms() runs the model's
// single-thread forward and backward again with the layers of layers.h, in gpt.cc's order, and
// adds up |term| for every element as it goes. Its gradient is returned too: when it has the
// model's bits, the magnitudes are those of the model's sums.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/gpt_tensors.h"
#include "zerodp/model/gpt.h"
#include "zerodp/model/layers.h"

namespace zerodp::model::testing {

struct GptTerms {
  std::vector<float> grads;     // the gradient, as one thread computes it from zero
  std::vector<double> abs_sum;  // per element: sum of |terms| its gradient adds up
  std::size_t most_terms = 0;   // the most terms any element adds up: 2 B T (wte: LM head
                                // and embedding lookups), B T for every other tensor
};

// `windows`: B windows of T + 1 bytes (inputs, then the last target), as begin_windows takes.
inline GptTerms gpt_terms(const GptConfig& cfg, const std::vector<UnitInfo>& units,
                          std::span<const float> params, std::span<const std::uint8_t> windows,
                          std::size_t B, float grad_scale) {
  const std::size_t L = cfg.layers, C = cfg.hidden, T = cfg.seq_len, V = cfg.vocab, NH = cfg.heads,
                    BT = B * T;
  std::vector<std::uint8_t> tokens(BT), targets(BT);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      tokens[b * T + t] = windows[b * (T + 1) + t];
      targets[b * T + t] = windows[b * (T + 1) + t + 1];
    }
  }
  GptTerms r;
  r.grads.assign(params.size(), 0.0f);
  r.abs_sum.assign(params.size(), 0.0);
  r.most_terms = 2 * BT;
  auto at = [&](std::size_t unit, std::size_t tensor) {
    return units[unit].param_offset + units[unit].tensors[tensor].offset;
  };
  const float* p = params.data();
  float* g = r.grads.data();
  double* s = r.abs_sum.data();
  // Magnitudes of the three kinds of terms.
  auto weight_terms = [&](std::size_t w, const float* dy, const float* x, std::size_t in,
                          std::size_t out) {  // dW [out, in] += dy^T x
    for (std::size_t k = 0; k < BT; ++k) {
      for (std::size_t o = 0; o < out; ++o) {
        const double d = std::fabs(double{dy[k * out + o]});
        for (std::size_t c = 0; c < in; ++c) s[w + o * in + c] += d * std::fabs(x[k * in + c]);
      }
    }
  };
  auto row_terms = [&](std::size_t bias, const float* dy, std::size_t n) {  // dbias += rows
    for (std::size_t k = 0; k < BT; ++k) {
      for (std::size_t o = 0; o < n; ++o) s[bias + o] += std::fabs(dy[k * n + o]);
    }
  };
  auto layernorm_terms = [&](std::size_t weight, std::size_t bias, const float* dy, const float* x,
                             const float* mean, const float* rstd) {
    for (std::size_t k = 0; k < BT; ++k) {
      for (std::size_t c = 0; c < C; ++c) {
        const float xhat = (x[k * C + c] - mean[k]) * rstd[k];
        s[weight + c] += std::fabs(xhat * dy[k * C + c]);
        s[bias + c] += std::fabs(dy[k * C + c]);
      }
    }
  };

  // Forward, keeping what the backward reads.
  std::vector<std::vector<float>> x(L + 1, std::vector<float>(BT * C));
  struct Block {
    std::vector<float> ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2, ln2_mean, ln2_rstd, fch,
        fch_gelu;
  };
  std::vector<Block> blocks(L);
  encoder_forward(x[0].data(), tokens.data(), p + at(0, kWte), p + at(0, kWpe), B, T, C);
  for (std::size_t l = 0; l < L; ++l) {
    Block& a = blocks[l];
    auto w = [&](std::size_t t) { return p + at(l + 1, t); };
    a.ln1.resize(BT * C), a.ln1_mean.resize(BT), a.ln1_rstd.resize(BT), a.qkv.resize(BT * 3 * C);
    a.att.resize(B * NH * T * T), a.atty.resize(BT * C), a.res2.resize(BT * C);
    a.ln2.resize(BT * C), a.ln2_mean.resize(BT), a.ln2_rstd.resize(BT);
    a.fch.resize(BT * 4 * C), a.fch_gelu.resize(BT * 4 * C);
    layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x[l].data(),
                      w(kLn1Weight), w(kLn1Bias), BT, C);
    matmul_forward(a.qkv.data(), a.ln1.data(), w(kAttnWeight), w(kAttnBias), BT, C, 3 * C);
    attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), B, T, C, NH);
    matmul_residual_forward(a.res2.data(), x[l].data(), a.atty.data(), w(kAttnProjWeight),
                            w(kAttnProjBias), BT, C, C);
    layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res2.data(),
                      w(kLn2Weight), w(kLn2Bias), BT, C);
    matmul_forward(a.fch.data(), a.ln2.data(), w(kFcWeight), w(kFcBias), BT, C, 4 * C);
    gelu_forward_keep_slope(a.fch_gelu.data(), a.fch.data(), a.fch.data(), BT * 4 * C);
    matmul_residual_forward(x[l + 1].data(), a.res2.data(), a.fch_gelu.data(), w(kFcProjWeight),
                            w(kFcProjBias), BT, 4 * C, C);
  }
  std::vector<float> lnf(BT * C), lnf_mean(BT), lnf_rstd(BT), logits(BT * V), probs(BT * V),
      losses(BT);
  layernorm_forward(lnf.data(), lnf_mean.data(), lnf_rstd.data(), x[L].data(),
                    p + at(L + 1, kLnfWeight), p + at(L + 1, kLnfBias), BT, C);
  matmul_forward(logits.data(), lnf.data(), p + at(0, kWte), nullptr, BT, C, V);
  crossentropy_softmax_forward(probs.data(), losses.data(), logits.data(), targets.data(), BT, V);

  // Backward, in gpt.cc's order, each parameter layer's terms added up before it runs.
  std::vector<float> dlogits(BT * V), dln(BT * C), dres(BT * C, 0.0f), dy(BT * C), dq(BT * 3 * C),
      df(BT * 4 * C), scratch(T * T);
  crossentropy_softmax_backward(dlogits.data(), probs.data(), targets.data(),
                                grad_scale / static_cast<float>(BT), BT, V);
  weight_terms(at(0, kWte), dlogits.data(), lnf.data(), C, V);
  matmul_backward(dln.data(), g + at(0, kWte), nullptr, dlogits.data(), lnf.data(), p + at(0, kWte),
                  BT, C, V);
  layernorm_terms(at(L + 1, kLnfWeight), at(L + 1, kLnfBias), dln.data(), x[L].data(),
                  lnf_mean.data(), lnf_rstd.data());
  layernorm_backward(dres.data(), g + at(L + 1, kLnfWeight), g + at(L + 1, kLnfBias), dln.data(),
                     x[L].data(), p + at(L + 1, kLnfWeight), lnf_mean.data(), lnf_rstd.data(), BT,
                     C);
  for (std::size_t l = L; l-- > 0;) {
    const Block& a = blocks[l];
    auto w = [&](std::size_t t) { return p + at(l + 1, t); };
    auto gw = [&](std::size_t t) { return g + at(l + 1, t); };
    auto sw = [&](std::size_t t) { return at(l + 1, t); };
    weight_terms(sw(kFcProjWeight), dres.data(), a.fch_gelu.data(), 4 * C, C);
    row_terms(sw(kFcProjBias), dres.data(), C);
    matmul_backward(df.data(), gw(kFcProjWeight), gw(kFcProjBias), dres.data(), a.fch_gelu.data(),
                    w(kFcProjWeight), BT, 4 * C, C);
    gelu_backward_from_slope(df.data(), gw(kFcBias), a.fch.data(), df.data(), BT, 4 * C);
    row_terms(sw(kFcBias), df.data(), 4 * C);  // the terms are the products it wrote
    weight_terms(sw(kFcWeight), df.data(), a.ln2.data(), C, 4 * C);
    matmul_backward(dln.data(), gw(kFcWeight), nullptr, df.data(), a.ln2.data(), w(kFcWeight), BT,
                    C, 4 * C);
    layernorm_terms(sw(kLn2Weight), sw(kLn2Bias), dln.data(), a.res2.data(), a.ln2_mean.data(),
                    a.ln2_rstd.data());
    layernorm_backward(dres.data(), gw(kLn2Weight), gw(kLn2Bias), dln.data(), a.res2.data(),
                       w(kLn2Weight), a.ln2_mean.data(), a.ln2_rstd.data(), BT, C);
    weight_terms(sw(kAttnProjWeight), dres.data(), a.atty.data(), C, C);
    row_terms(sw(kAttnProjBias), dres.data(), C);
    matmul_backward(dy.data(), gw(kAttnProjWeight), gw(kAttnProjBias), dres.data(), a.atty.data(),
                    w(kAttnProjWeight), BT, C, C);
    attention_backward(dq.data(), scratch.data(), dy.data(), a.qkv.data(), a.att.data(), B, T, C,
                       NH);
    weight_terms(sw(kAttnWeight), dq.data(), a.ln1.data(), C, 3 * C);
    row_terms(sw(kAttnBias), dq.data(), 3 * C);
    matmul_backward(dln.data(), gw(kAttnWeight), gw(kAttnBias), dq.data(), a.ln1.data(),
                    w(kAttnWeight), BT, C, 3 * C);
    layernorm_terms(sw(kLn1Weight), sw(kLn1Bias), dln.data(), x[l].data(), a.ln1_mean.data(),
                    a.ln1_rstd.data());
    layernorm_backward(dres.data(), gw(kLn1Weight), gw(kLn1Bias), dln.data(), x[l].data(),
                       w(kLn1Weight), a.ln1_mean.data(), a.ln1_rstd.data(), BT, C);
  }
  for (std::size_t k = 0; k < BT; ++k) {  // the embeddings: one row of dres per position
    for (std::size_t c = 0; c < C; ++c) {
      s[at(0, kWte) + tokens[k] * C + c] += std::fabs(dres[k * C + c]);
      s[at(0, kWpe) + (k % T) * C + c] += std::fabs(dres[k * C + c]);
    }
  }
  encoder_backward(g + at(0, kWte), g + at(0, kWpe), dres.data(), tokens.data(), B, T, C);
  return r;
}

}  // namespace zerodp::model::testing

// The layers of the GPT, each a forward/backward pair side by side, in llm.c's style:
// outputs first, then inputs, then weights, then sizes; shapes as comments; fp32.
//
// Gradient rule, chosen so that no gradient buffer ever needs zeroing:
//  - gradients of PARAMETERS (d-weights, d-biases) are always ADDED (+=): the engine's views
//    accumulate over micro-batches, and the tied token embedding gets two contributions;
//  - gradients of ACTIVATIONS are WRITTEN (=) by the one layer that produces them, and ADDED
//    only where two streams meet: layernorm's dinp, which adds into the residual stream's
//    gradient. (The blocks keep that gradient in one buffer that both branches of x + f(x)
//    read, so the residual connection itself has no backward.)
// Each backward says which of its outputs it writes and which it adds into.
//
// Sizes: B batch, T time (sequence), C channels, OC output channels, V vocabulary, NH heads.
// Weights of matmuls are stored [OC, C] (as torch.nn.Linear), so out = inp @ weight^T + bias.
// No layer allocates; attention_backward takes its scratch from the caller. No output of a
// call may overlap another of its arguments, except where a function says so.
//
// The layers with matrix products (matmul_*, attention_*) take a last argument `how`: the
// compute of their products and its scratch (zerodp/model/gemm.h), fp32 when not given. Every
// other operation (norms, softmax, GELU, the loss, every sum outside the products) is fp32
// whatever the compute.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zerodp/model/gemm.h"

namespace zerodp::model {

// out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]
void encoder_forward(float* out,                          // [B, T, C]
                     const std::uint8_t* inp,             // [B, T] token ids < V
                     const float* wte, const float* wpe,  // [V, C], [T, C]
                     std::size_t B, std::size_t T, std::size_t C);
// Adds into dwte and dwpe.
void encoder_backward(float* dwte, float* dwpe,  // [V, C], [T, C]
                      const float* dout,         // [B, T, C]
                      const std::uint8_t* inp,   // [B, T]
                      std::size_t B, std::size_t T, std::size_t C);

// out = (inp - mean) * rstd * weight + bias over the last axis, eps 1e-5; keeps mean and
// rstd for the backward.
void layernorm_forward(float* out, float* mean, float* rstd,    // [B*T, C], [B*T], [B*T]
                       const float* inp,                        // [B*T, C]
                       const float* weight, const float* bias,  // [C], [C]
                       std::size_t BT, std::size_t C);
// Adds into dinp (it joins the residual stream), dweight and dbias; both null for a frozen norm.
void layernorm_backward(float* dinp, float* dweight, float* dbias,  // [B*T, C], [C], [C]
                        const float* dout,                          // [B*T, C]
                        const float* inp, const float* weight,      // [B*T, C], [C]
                        const float* mean, const float* rstd,       // [B*T], [B*T]
                        std::size_t BT, std::size_t C);

// out = inp @ weight^T + bias (bias may be null), through GEMM.
void matmul_forward(float* out,                              // [B*T, OC]
                    const float* inp,                        // [B*T, C]
                    const float* weight, const float* bias,  // [OC, C], [OC] or null
                    std::size_t BT, std::size_t C, std::size_t OC, const GemmCompute& how = {});
// out = residual + inp @ weight^T + bias, through one GEMM that accumulates into out: a
// residual connection after a projection, without the projection's own buffer or a pass to add.
void matmul_residual_forward(float* out,                              // [B*T, OC]
                             const float* residual,                   // [B*T, OC]
                             const float* inp,                        // [B*T, C]
                             const float* weight, const float* bias,  // [OC, C], [OC]
                             std::size_t BT, std::size_t C, std::size_t OC,
                             const GemmCompute& how = {});
// Writes dinp; adds into dweight and dbias (dbias may be null when bias was). A frozen weight
// passes dweight and dbias null: dinp alone is computed.
void matmul_backward(float* dinp, float* dweight, float* dbias,  // [B*T, C], [OC, C], [OC]
                     const float* dout,                          // [B*T, OC]
                     const float* inp, const float* weight,      // [B*T, C], [OC, C]
                     std::size_t BT, std::size_t C, std::size_t OC, const GemmCompute& how = {});

// LoRA's adapter beside a projection of IN inputs and OUT outputs (PEFT's LoRA Linear, dropout
// 0): u = inp A^T is kept for the backward, then out += scale u B^T.
void lora_forward(float* out, float* u,            // [B*T, OUT], [B*T, R]
                  const float* inp,                // [B*T, IN]
                  const float* A, const float* B,  // [R, IN], [OUT, R]
                  float scale, std::size_t BT, std::size_t IN, std::size_t OUT, std::size_t R,
                  const GemmCompute& how = {});
// Adds dB += scale dout^T u, dA += du^T inp and dinp += du A (dinp holds the projection's own
// input gradient already); writes du = scale dout B, its scratch [B*T, R].
void lora_backward(float* dinp, float* dA, float* dB, float* du,  // [B*T, IN], [R, IN], [OUT, R]
                   const float* dout,                             // [B*T, OUT]
                   const float* inp, const float* u,              // [B*T, IN], [B*T, R]
                   const float* A, const float* B, float scale, std::size_t BT, std::size_t IN,
                   std::size_t OUT, std::size_t R, const GemmCompute& how = {});

// Causal multi-head self-attention. inp holds q, k, v side by side on each row; head h owns
// columns [h*HS, (h+1)*HS) of each, HS = C / NH. att keeps the softmax probabilities, with
// the future (t2 > t) set to zero, for the backward. Scores are scaled by 1/sqrt(HS); the
// softmax subtracts the row maximum.
void attention_forward(float* out, float* att,  // [B, T, C], [B, NH, T, T]
                       const float* inp,        // [B, T, 3C]
                       std::size_t B, std::size_t T, std::size_t C, std::size_t NH,
                       const GemmCompute& how = {});
// Writes dinp (every element of q, k and v has one producer). scratch: T*T floats.
void attention_backward(float* dinp, float* scratch,         // [B, T, 3C], [T, T]
                        const float* dout,                   // [B, T, C]
                        const float* inp, const float* att,  // [B, T, 3C], [B, NH, T, T]
                        std::size_t B, std::size_t T, std::size_t C, std::size_t NH,
                        const GemmCompute& how = {});

// GELU, tanh approximation (GPT-2's "gelu_new"):
// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as x sigmoid(2 (...)).
void gelu_forward(float* out, const float* inp, std::size_t N);
// Writes dinp.
void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t N);
// The same pair with the derivative computed once, in the forward: the backward is then one
// multiplication per element instead of a second evaluation of the exponential.
// gelu_forward_keep_slope writes out = GELU(inp) and slope = GELU'(inp); slope may be inp
// itself, for a caller that needs inp afterwards only through the derivative.
void gelu_forward_keep_slope(float* out, float* slope, const float* inp, std::size_t N);
// Writes dinp = slope * dout, the same bits as gelu_backward; dinp may be dout itself. Adds
// dinp summed over its rows into dbias: the gradient of the bias of the matmul that fed the
// GELU, which that matmul_backward then skips (null dbias), saving it a pass over dinp. A
// frozen bias passes dbias null.
void gelu_backward_from_slope(float* dinp, float* dbias,              // [B*T, OC], [OC]
                              const float* slope, const float* dout,  // [B*T, OC] each
                              std::size_t BT, std::size_t OC);

// Fused softmax and cross-entropy over the last axis: probs = softmax(logits) (row maximum
// subtracted), losses[i] = -log probs[i, targets[i]].
void crossentropy_softmax_forward(float* probs, float* losses,  // [B*T, V], [B*T]
                                  const float* logits,          // [B*T, V]
                                  const std::uint8_t* targets,  // [B*T]
                                  std::size_t BT, std::size_t V);
// Writes dlogits = (probs - onehot(target)) * dloss, where dloss is d(objective)/d(losses[i]),
// the same for every position (the GPT's is grad_scale / (B*T)).
void crossentropy_softmax_backward(float* dlogits,               // [B*T, V]
                                   const float* probs,           // [B*T, V]
                                   const std::uint8_t* targets,  // [B*T]
                                   float dloss, std::size_t BT, std::size_t V);

}  // namespace zerodp::model

// What the activation counts of model_activations.cc and lora_activations.cc share: the
// model's sizes in 128 bits, the counter of every tensor a full fine-tune's autograd saves,
// module by module (the frozen LoRA run's counter builds on its terms), the rough bound that
// keeps the exact sums from wrapping, and the activations of saved tensors under a
// checkpointing choice. Internal to the catalogue.
#pragma once

#include <algorithm>
#include <optional>

#include "zerodp/catalog/models.h"

namespace zerodp::catalog::saved {

using u128 = unsigned __int128;

// Sizes as 128-bit numbers: T tokens (s x b), widths of q (heads x head_dim) and of k and v
// (kv heads x head_dim), the s² elements of one layer's scores (heads x s x T).
struct Dims {
  u128 s, b, T, h, a, kv, d, q, k, I, V, scores;
};

class Counter {
 public:
  Counter(const ModelConfig& c, std::uint64_t s, std::uint64_t b, Attention attention,
          const plan::TorchRuntime& rt)
      : c_(c), attention_(attention), rt_(rt) {
    Dims& x = x_;
    x.s = s;
    x.b = b;
    x.T = u128(s) * b;
    x.h = c.hidden;
    x.a = c.heads;
    x.kv = c.kv_heads;
    x.d = c.head_dim;
    x.q = x.a * x.d;
    x.k = x.kv * x.d;
    x.I = c.intermediate;
    x.V = c.vocab;
    x.scores = x.a * x.s * x.T;
  }

  // RMSNorm over N rows of w: the fp32 copy of the input (saved by pow), x² when mean keeps
  // its input, rsqrt per row, and the normalized rows multiplied by the weight: 16-bit for
  // llama's (cast before the weight), fp32 for olmo2's and gemma's (cast after), with gemma's
  // (1 + weight) in fp32 besides.
  u128 rms(u128 N, u128 w) const {
    const bool fp32_out = c_.model_type == "olmo2" || gemma();
    u128 bytes = 4 * N * w + 4 * N + (fp32_out ? 4 : 2) * N * w;
    if (rt_.mean_keeps_input) bytes += 4 * N * w;
    if (gemma()) bytes += 4 * w;
    return bytes;
  }
  // LayerNorm over T rows of h: its input unless already kept, mean and rstd per row.
  u128 layer_norm(bool input_kept) const {
    return (input_kept ? 0 : 2 * x_.T * x_.h) + 2 * rt_.norm_stat_bytes * x_.T;
  }

  // Eager attention, written as llama's eager_attention_forward: q and k copied by matmul's
  // reshape, k and v at every head (repeat_kv materialises them, so grouped heads save
  // nothing), the 8-byte scale, the fp32 softmax and its 16-bit copy (with dropout, the mask
  // and the dropped copy instead). `v_whole` is the storage v is a view of when the batch of
  // one lets matmul keep the view (a fused projection's output): then that whole output.
  // Flash attention: flash_attn's forward saves q, k and v as it is given them (a view whose
  // last stride is 1 is not copied), its padded output and an fp32 log-sum-exp per row. So q
  // and k at their own widths, v at its own or, when it is a view of a fused projection's
  // output (`v_fused`), that whole output at any batch; DeepSeek pads v to q's head width and
  // slices the padded output, a storage apart from o_proj's input. Elsewhere the output is
  // o_proj's input, counted there. Read from flash_attn's code, not checked here: PyTorch on
  // the CPU has no flash kernel.
  // SDPA (transformers' default, torch >= 2.5, no padding mask: packed or unpadded batches)
  // hands scaled_dot_product_attention q, k and v as flash_attn gets them (grouped heads via
  // enable_gqa, not repeated) and its flash or memory-efficient kernel saves the same, plus its
  // own output: transformers then makes o_proj's input with transpose(1, 2).contiguous(), a
  // second storage (2Tav). A padding mask instead repeats k and v to every head and adds the
  // mask; not counted here.
  u128 core(u128 qk_width, u128 v_width, u128 v_whole = 0, u128 v_fused = 0) const {
    const Dims& x = x_;
    if (attention_ != Attention::eager) {
      const u128 lse = 4 * x.a * x.T;
      if (c_.latent) return 4 * (2 * x.T * x.a * qk_width) + lse;  // q, k, padded v and output
      const u128 sdpa_output = attention_ == Attention::sdpa ? 2 * x.T * x.a * v_width : 0;
      return 2 * x.T * (x.q + x.k) + (v_fused > 0 ? v_fused : 2 * x.T * x.k) + lse + sdpa_output;
    }
    u128 bytes = 2 * x.T * x.a * qk_width * 2;  // q, k
    bytes += v_whole > 0 ? v_whole : 2 * x.T * x.a * v_width;
    bytes += 8;  // `* scaling`, a wrapped float64
    return bytes + scores();
  }
  // The s² terms of one layer's eager attention (0 with flash).
  u128 scores() const {
    if (attention_ != Attention::eager) return 0;
    const u128 n = x_.scores;
    if (c_.model_type == "gpt2") {  // softmax in 16 bits, saved by itself
      return 2 * n + (c_.attention_dropout ? (rt_.mask_bytes + 2) * n : 0);
    }
    u128 bytes = 4 * n + 2 * n + (c_.attention_dropout ? rt_.mask_bytes * n : 0);
    if (c_.attention_softcap) bytes += 2 * n;  // tanh's 16-bit output
    return bytes;
  }
  // Dropout masks on the two residual branches of a layer.
  u128 residual_masks() const { return c_.hidden_dropout ? 2 * rt_.mask_bytes * x_.T * x_.h : 0; }

  // A gated MLP of `width` on T tokens whose input is not yet kept: the input, the gate's
  // output (the activation's input), the activation's output, up's output, their product.
  u128 gated_mlp(u128 tokens, u128 width, bool input_kept = false) const {
    return (input_kept ? 0 : 2 * tokens * x_.h) + 8 * tokens * width;
  }

  u128 attention_llama() const {
    const Dims& x = x_;
    u128 bytes = 2 * x.T * x.h;  // q/k/v projections' shared input (the norm's output)
    if (c_.qk_norm == QkNorm::per_head) bytes += rms(x.T * x.a, x.d) + rms(x.T * x.kv, x.d);
    if (c_.qk_norm == QkNorm::whole) bytes += rms(x.T, x.q) + rms(x.T, x.k);
    // phi3's fused qkv: v a view of the whole output, kept by flash at any batch and by eager
    // attention at batch 1 without grouped heads (repeat_kv copies grouped ones).
    const u128 fused = c_.fused_qkv ? 2 * x.T * (x.q + 2 * x.k) : 0;
    bytes += core(x.d, x.d, x.b == 1 && x.kv == x.a ? fused : 0, fused);
    bytes += 2 * x.T * x.q;                                                   // o_proj's input
    if (c_.attention_softcap && attention_ == Attention::eager) bytes += 16;  // two scalars
    return bytes;
  }

  // A mixture's MLP: the router's input, its fp32 softmax and top-k indices (and with
  // renormalised weights, their clone and sum), then per routed token the index of where it
  // goes, its copy, the expert's gated MLP, the expert's output and the routing weight
  // multiplying it, and index_add_'s source. The sum over experts is k x T whatever the
  // routing. DeepSeek routes in fp32 (a copy of the input and of the router's weight) and
  // keeps each fused gate-up output whole and the weight in fp32.
  u128 mixture() const {
    const Dims& x = x_;
    const u128 E = c_.experts, k = c_.experts_per_token, Ie = c_.expert_intermediate;
    const bool deepseek = c_.latent.has_value();
    u128 bytes = deepseek ? 4 * x.T * x.h + 4 * E * x.h + 8 : 2 * x.T * x.h;
    bytes += 4 * x.T * E + 8 * x.T * k;
    if (c_.group_limited_routing) bytes += x.T * E;  // masked_fill's bool mask of the groups
    if (c_.norm_topk_prob) bytes += 4 * x.T * k + 4 * x.T;
    bytes += k * x.T * (6 * x.h + 8 * Ie + (deepseek ? 20 : 18));
    if (c_.shared_intermediate > 0) {
      // Its input is the router's (16-bit) input: kept already, unless routing was in fp32.
      bytes += gated_mlp(x.T, c_.shared_intermediate, !deepseek);
      if (c_.shared_expert_gate) bytes += 2 * x.T + 2 * x.T * x.h;  // sigmoid, shared output
    }
    return bytes;
  }

  // One layer's saved bytes; `moe` for a mixture's layer.
  u128 layer(bool moe) const {
    const Dims& x = x_;
    const std::string& t = c_.model_type;
    if (t == "gpt2") {
      // ln_1, c_attn's input, q, k^T and v copies, the 16-bit scale, the scores; c_proj's
      // input; ln_2, c_fc's input, the activation, mlp.c_proj's input.
      const u128 act = c_.gelu_formula ? 8 * x.T * x.I + 24 : 2 * x.T * x.I;
      const u128 attention = attention_ == Attention::flash  ? 6 * x.T * x.h + 4 * x.a * x.T
                             : attention_ == Attention::sdpa ? 8 * x.T * x.h + 4 * x.a * x.T
                                                             : 6 * x.T * x.h + 2 + scores();
      u128 bytes = layer_norm(false) + 2 * x.T * x.h + attention;
      bytes += 2 * x.T * x.h + layer_norm(false) + 2 * x.T * x.h + act + 2 * x.T * x.I;
      return bytes + residual_masks();
    }
    if (t == "gpt_neox") {
      // The parallel residual gives both norms one input; v is a view of the fused output.
      const u128 fused = 2 * x.T * (x.q + 2 * x.k);
      u128 bytes = layer_norm(false) + 2 * x.T * x.h + core(x.d, x.d, x.b == 1 ? fused : 0, fused);
      bytes += 2 * x.T * x.h;
      bytes += layer_norm(c_.parallel_residual) + 2 * x.T * x.h + 4 * x.T * x.I;
      return bytes + residual_masks();
    }
    if (c_.latent) {
      const LatentAttention& l = *c_.latent;
      const u128 qk = l.nope_dim + l.rope_dim, v = l.v_dim, rank = l.kv_rank;
      u128 bytes = rms(x.T, x.h) + 2 * x.T * x.h;  // input norm; q_proj and kv_a's input
      if (l.q_rank > 0) bytes += rms(x.T, l.q_rank) + 2 * x.T * l.q_rank;
      bytes += rms(x.T, rank) + 2 * x.T * rank;  // kv_a_layernorm, kv_b_proj's input
      const u128 v_whole = x.b == 1 ? 2 * x.T * x.a * (l.nope_dim + v) : 0;
      bytes += core(qk, v, v_whole) + 2 * x.T * x.a * v + rms(x.T, x.h);
      return bytes + (moe ? mixture() : gated_mlp(x.T, x.I));
    }
    // The llama family: norms before attention and MLP (olmo2: after; gemma: both).
    u128 bytes = c_.norms_per_layer * rms(x.T, x.h) + attention_llama();
    bytes += moe ? mixture() : gated_mlp(x.T, x.I);
    return bytes + residual_masks();
  }

  // Embedding, final norm, LM head and loss. The token ids (int64) for the embedding (and
  // gpt2's position ids), the final norm, the head's input, the fp32 log-softmax, the shifted
  // labels (at batch 1 a view of the padded s + 1) and the total weight.
  u128 outside() const {
    const Dims& x = x_;
    const std::string& t = c_.model_type;
    u128 bytes = 8 * x.T;
    if (t == "gpt2") bytes += 8 * x.s;
    if (t == "gemma2") bytes += 2;  // the normalizer, a 16-bit scalar
    if (c_.embedding_dropout) bytes += rt_.mask_bytes * x.T * x.h;
    bytes += c_.norm_bias ? layer_norm(false) : rms(x.T, x.h);
    bytes += 2 * x.T * x.h;
    if (c_.final_softcap) bytes += 2 * x.T * x.V + 16;  // tanh's output, two scalars
    bytes += 4 * x.T * x.V + (x.b == 1 ? 8 * (x.s + 1) : 8 * x.T) + 4;
    return bytes;
  }

  // The rotary cos and sin, computed once (batch 1) and saved by every layer: 16-bit, fp32 for
  // olmo2, DeepSeek's complex64 freqs_cis alone.
  u128 rope_tables() const {
    const u128 r = c_.rotary_dim, s = x_.s;
    if (r == 0) return 0;
    if (c_.latent) return 4 * s * r;
    return c_.rope_tables * 2 * (c_.model_type == "olmo2" ? 4 : 2) * s * r;
  }

  // Beyond the saved bytes, at the loss: in backward, the fp32 gradients of the log-softmax's
  // output and input live with its saved output.
  u128 loss_working() const { return 8 * x_.T * x_.V; }

  const Dims& dims() const { return x_; }

 private:
  bool gemma() const { return c_.model_type == "gemma2" || c_.model_type == "gemma3_text"; }
  const ModelConfig& c_;
  Attention attention_;
  const plan::TorchRuntime& rt_;
  Dims x_{};
};

// A rough size first (an overestimate), so that the exact sums cannot wrap 128 bits.
inline bool too_large(const ModelConfig& c, std::uint64_t s, std::uint64_t b) {
  const long double widest_mlp =
      static_cast<long double>(c.intermediate) +
      static_cast<long double>(c.expert_intermediate) * (c.experts_per_token + 1) +
      static_cast<long double>(c.shared_intermediate);
  long double latent = 0;
  if (c.latent) {
    const LatentAttention& l = *c.latent;
    latent = static_cast<long double>(l.kv_rank) + l.q_rank + l.rope_dim +
             static_cast<long double>(c.heads) * (l.v_dim + l.nope_dim + l.rope_dim);
  }
  // Every term of the exact sums is below its counterpart here: per token, per layer.
  const long double per_token =
      64.0L * c.hidden * (c.norms_per_layer + 4) + 16.0L * c.heads * s + 16.0L * widest_mlp +
      16.0L * c.experts + 64.0L * c.heads * c.head_dim + 64.0L * c.kv_heads * c.head_dim +
      64.0L * latent + 32.0L * c.experts_per_token * c.hidden + 24.0L * c.vocab + 64.0L;
  const long double rough = (static_cast<long double>(s) * b * per_token +
                             8.0L * c.experts * c.hidden + 64.0L * s * c.rotary_dim) *
                            (c.layers + 2.0L);
  return !(rough < 1e36L);
}

// The activations of saved tensors under a checkpointing choice: every layer's saved bytes, or
// without the s² terms (selective, recomputed), or each layer's input and the largest layer
// while it is recomputed (full); the rotary tables; outside the layers, and the loss's
// gradients in backward.
std::optional<ModelActivations> activations_of(const SavedTensors& saved, const Counter& n,
                                               const ModelConfig& c,
                                               plan::Checkpointing checkpointing);

}  // namespace zerodp::catalog::saved

// The tensors one micro-batch keeps for backward (models.h), module by module as the Hugging
// Face implementations run them in eager mode with 16-bit parameters, and what the loss works
// in beyond them. Every term is a tensor autograd saves; tests/plan/torch_reference holds the
// same modules written in PyTorch and checks these sums against the bytes PyTorch saves.
#include <algorithm>

#include "zerodp/catalog/lora.h"
#include "zerodp/catalog/models.h"
#include "zerodp/common/error.h"

namespace zerodp::catalog {
namespace {

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

// A LoRA run's saved tensors (lora.h): every base parameter frozen, so a term is kept only
// where a gradient needs it. `grad` flags say which tensors need one: in every layer but the
// first, all of them (the residual stream carries the adapters' gradients); in the first, those
// a trainable path reaches.
class LoraCounter {
 public:
  LoraCounter(const Counter& n, const ModelConfig& c, const LoraShape& lora, Attention attention,
              const plan::TorchRuntime& rt)
      : n_(n), c_(c), lora_(lora), attention_(attention), rt_(rt) {}

  bool adapted(std::string_view name) const {
    return std::find(lora_.adapted.begin(), lora_.adapted.end(), name) != lora_.adapted.end();
  }
  // A norm with its weight frozen, on an input that needs a gradient: no normalized rows kept
  // for the weight (llama's 16-bit ones, olmo2's and gemma's fp32 ones); gemma's 1 + weight
  // stays, kept for the input's gradient.
  u128 rms_frozen(u128 rows, u128 width) const {
    const bool fp32_out = c_.model_type == "olmo2" || gemma();
    return n_.rms(rows, width) - (fp32_out ? 4 : 2) * rows * width;
  }
  bool gemma() const { return c_.model_type == "gemma2" || c_.model_type == "gemma3_text"; }
  // What `count` adapters on linears sharing one input of `width` keep of it: the input once
  // (lora_A's), or with dropout each its own dropped copy and, where the input needs a
  // gradient, its mask.
  u128 inputs(u128 width, u128 count, bool grad) const {
    return inputs_of(n_.dims().T, width, count, grad);
  }
  u128 inputs_of(u128 tokens, u128 width, u128 count, bool grad) const {
    if (count == 0) return 0;
    if (lora_.dropout == 0) return 2 * tokens * width;
    return count * (2 + (grad ? rt_.mask_bytes : 0)) * tokens * width;
  }
  // lora_A's output, kept by lora_B, and `* scaling`'s wrapped float64.
  u128 adapter() const { return 2 * n_.dims().T * lora_.rank + 8; }

  // Eager attention's core with q, k, v needing gradients or not: matmul keeps k (at every
  // head) for q's gradient and q for k's; the scale, the fp32 softmax and v where the scores
  // need one; the 16-bit probabilities where v needs one. Flash and SDPA keep their whole core
  // when any of the three does.
  u128 core(bool gq, bool gk, bool gv) const {
    const Dims& x = n_.dims();
    const u128 fused = c_.fused_qkv ? 2 * x.T * (x.q + 2 * x.k) : 0;
    if (attention_ != Attention::eager) {
      return gq || gk || gv ? n_.core(x.d, x.d, x.b == 1 && x.kv == x.a ? fused : 0, fused) : 0;
    }
    const u128 head = 2 * x.T * x.a * x.d, v = x.b == 1 && x.kv == x.a && fused > 0 ? fused : head;
    u128 bytes = (gq ? head : 0) + (gk ? head : 0);
    if (gq || gk) bytes += 8 + 4 * x.scores + v;
    if ((gq || gk) && c_.attention_softcap) bytes += 2 * x.scores + 16;  // tanh, two scalars
    if (gv) bytes += 2 * x.scores;
    return bytes;
  }

  // One layer of the llama family, its input needing a gradient or not. Norms before attention
  // and MLP (llama's), after them (olmo2's), or both (gemma's), each kept where its input
  // needs a gradient.
  u128 layer(bool grad_in, bool moe = false) const {
    if (c_.model_type == "gpt2") return gpt2_layer(grad_in);
    if (c_.model_type == "gpt_neox") return neox_layer(grad_in);
    const Dims& x = n_.dims();
    const bool pre_norms = c_.model_type != "olmo2";
    const bool post_norms = c_.model_type == "olmo2" || gemma();
    u128 adapters = 0;
    // Whether a linear of this layer is adapted; its adapter's bytes counted once if so.
    auto take = [&](std::string_view name) {
      const bool a = adapted(name);
      if (a) adapters += adapter();
      return a;
    };
    u128 bytes = pre_norms && grad_in ? rms_frozen(x.T, x.h) : 0;  // the input norm
    const bool fused = c_.fused_qkv;
    const bool aq = take(fused ? "self_attn.qkv_proj" : "self_attn.q_proj");
    const bool ak = fused ? aq : take("self_attn.k_proj");
    const bool av = fused ? aq : take("self_attn.v_proj");
    bytes += inputs(x.h, fused ? u128(aq) : u128(aq) + ak + av, grad_in);
    const bool gq = grad_in || aq, gk = grad_in || ak, gv = grad_in || av;
    if (c_.qk_norm == QkNorm::per_head) {
      bytes += (gq ? rms_frozen(x.T * x.a, x.d) : 0) + (gk ? rms_frozen(x.T * x.kv, x.d) : 0);
    }
    if (c_.qk_norm == QkNorm::whole) {
      bytes += (gq ? rms_frozen(x.T, x.q) : 0) + (gk ? rms_frozen(x.T, x.k) : 0);
    }
    bytes += core(gq, gk, gv);
    const bool g_attention = gq || gk || gv, ao = take("self_attn.o_proj");
    bytes += inputs(x.q, ao, g_attention);
    if (post_norms && (g_attention || ao)) bytes += rms_frozen(x.T, x.h);  // on o_proj's output
    const bool g_mid = grad_in || g_attention || ao;
    if (pre_norms && g_mid) bytes += rms_frozen(x.T, x.h);  // before the MLP
    if (moe) return bytes + mixture(g_mid) + adapters;
    bool g_product = false;
    if (c_.fused_gate_up) {
      const bool agu = take("mlp.gate_up_proj");
      bytes += inputs(x.h, agu, g_mid);
      // gate and up are views of one output: SiLU keeps it whole, the product the activation.
      g_product = g_mid || agu;
      if (g_product) bytes += 4 * x.T * x.I + 2 * x.T * x.I;
    } else {
      const bool ag = take("mlp.gate_proj"), au = take("mlp.up_proj");
      bytes += inputs(x.h, u128(ag) + au, g_mid);
      g_product = gated(x.T, x.I, g_mid || ag, g_mid || au, bytes);
    }
    const bool ad = take("mlp.down_proj");
    bytes += inputs(x.I, ad, g_product);
    if (post_norms && (g_product || ad)) bytes += rms_frozen(x.T, x.h);  // on down's output
    return bytes + adapters;
  }

  // A gated MLP's own terms on `tokens` with gate's and up's outputs needing a gradient or
  // not: SiLU's input and up's output (kept for the gate's side), the activation's output (for
  // up's); whether their product needs one.
  bool gated(u128 tokens, u128 width, bool g_gate, bool g_up, u128& bytes) const {
    if (g_gate) bytes += 4 * tokens * width;
    if (g_up) bytes += 2 * tokens * width;
    return g_gate || g_up;
  }

  // A mixture's MLP (Mixtral's and Qwen's, as transformers 4.x loops over the experts hit) on
  // an input needing a gradient or not. The router keeps its fp32 softmax, top-k indices and
  // renormalisation where its logits need one; each routed token its indices, and where the
  // experts' outputs need gradients its copy's and the gated MLP's terms; the combination
  // the expert's output twice and the routing weight. Every expert is taken as hit (each
  // expert's adapter keeps one scale a pass).
  u128 mixture(bool g_in) const {
    const Dims& x = n_.dims();
    const u128 E = c_.experts, k = c_.experts_per_token, Ie = c_.expert_intermediate;
    const u128 routed = k * x.T;
    const bool mixtral = c_.model_type == "mixtral";
    const std::string prefix = mixtral ? "block_sparse_moe." : "mlp.";
    u128 adapters = 0;
    auto take = [&](std::string_view name, u128 tokens, u128 passes) {
      const bool a = adapted(name);
      if (a) adapters += 2 * tokens * lora_.rank + 8 * passes;
      return a;
    };
    // The layer's input: the router's and the shared expert's linears share it.
    const bool a_router = take(prefix + "gate", x.T, 1);
    bool a_shared_gate = false, a_shared_up = false, a_shared_scale = false;
    if (c_.shared_intermediate > 0) {
      a_shared_gate = take("mlp.shared_expert.gate_proj", x.T, 1);
      a_shared_up = take("mlp.shared_expert.up_proj", x.T, 1);
      if (c_.shared_expert_gate) a_shared_scale = take("mlp.shared_expert_gate", x.T, 1);
    }
    u128 bytes = inputs(x.h, u128(a_router) + a_shared_gate + a_shared_up + a_shared_scale, g_in);
    const bool g_router = g_in || a_router;
    if (g_router) {
      bytes += 4 * x.T * E + 8 * x.T * k;
      if (c_.norm_topk_prob) bytes += 4 * x.T * k + 4 * x.T;
    }
    const std::string experts = prefix + "experts.*.";
    const bool a_gate = take(experts + (mixtral ? "w1" : "gate_proj"), routed, E);
    const bool a_up = take(experts + (mixtral ? "w3" : "up_proj"), routed, E);
    const bool a_down = take(experts + (mixtral ? "w2" : "down_proj"), routed, E);
    bytes += inputs_of(routed, x.h, u128(a_gate) + a_up, g_in);
    const bool g_product = gated(routed, Ie, g_in || a_gate, g_in || a_up, bytes);
    bytes += inputs_of(routed, Ie, a_down, g_product);
    const bool g_out = g_product || a_down;
    // Each routed token's indices, kept by the first step that needs them (the copy's
    // gather, the routing weight's, index_add_'s); the expert's output times its routing
    // weight, each kept for the other's gradient; index_add_'s source.
    if (g_in || g_router || g_out) bytes += 16 * routed;
    if (g_router) bytes += 2 * routed * x.h;
    if (g_out) bytes += 2 * routed;
    if (g_router || g_out) bytes += 2 * routed * x.h;
    if (c_.shared_intermediate > 0) {
      const bool g_product_shared =
          gated(x.T, c_.shared_intermediate, g_in || a_shared_gate, g_in || a_shared_up, bytes);
      const bool a_shared_down = take("mlp.shared_expert.down_proj", x.T, 1);
      bytes += inputs(c_.shared_intermediate, a_shared_down, g_product_shared);
      const bool g_shared_out = g_product_shared || a_shared_down;
      const bool g_scale = g_in || a_shared_scale;
      if (c_.shared_expert_gate) {
        if (g_scale) bytes += 2 * x.T + 2 * x.T * x.h;  // sigmoid's output; the shared output
        if (g_shared_out && !g_scale) bytes += 2 * x.T;
      }
    }
    return bytes + adapters;
  }

  // Every adapter of a layer: lora_A's output and the scale.
  u128 layer_adapters() const {
    u128 bytes = 0;
    for (const std::string_view name : lora_.adapted) {
      if (name != "lm_head" && name != "embed_out") bytes += adapter();
    }
    return bytes;
  }

  // GPT-2: LayerNorm keeps its input and statistics for the input's gradient whatever its
  // weight; c_attn's q, k and v are views of one output, so they need a gradient together; the
  // scores keep q for k's gradient and k for q's, the 16-bit scale, the softmax's output and v.
  u128 gpt2_layer(bool grad_in) const {
    const Dims& x = n_.dims();
    u128 bytes = grad_in ? n_.layer_norm(false) : 0;
    const bool a_qkv = adapted("attn.c_attn");
    bytes += inputs(x.h, a_qkv, grad_in);
    const bool g_qkv = grad_in || a_qkv;
    if (g_qkv) {
      bytes += attention_ == Attention::flash  ? 6 * x.T * x.h + 4 * x.a * x.T
               : attention_ == Attention::sdpa ? 8 * x.T * x.h + 4 * x.a * x.T
                                               : 6 * x.T * x.h + 2 + n_.scores();
    }
    const bool a_out = adapted("attn.c_proj");
    bytes += inputs(x.h, a_out, g_qkv);
    const bool g_mid = grad_in || g_qkv || a_out;
    if (g_mid) bytes += n_.layer_norm(false);
    const bool a_fc = adapted("mlp.c_fc");
    bytes += inputs(x.h, a_fc, g_mid);
    const bool g_fc = g_mid || a_fc;
    if (g_fc) bytes += c_.gelu_formula ? 8 * x.T * x.I + 24 : 2 * x.T * x.I;
    bytes += inputs(x.I, adapted("mlp.c_proj"), g_fc);
    return bytes + layer_adapters();
  }

  // GPT-NeoX: the fused query_key_value, a llama-style core, and (parallel residual) both
  // LayerNorms on the layer's input.
  u128 neox_layer(bool grad_in) const {
    const Dims& x = n_.dims();
    u128 bytes = grad_in ? n_.layer_norm(false) : 0;
    const bool a_qkv = adapted("attention.query_key_value");
    bytes += inputs(x.h, a_qkv, grad_in);
    const bool g_qkv = grad_in || a_qkv;
    bytes += core(g_qkv, g_qkv, g_qkv);
    const bool a_dense = adapted("attention.dense");
    bytes += inputs(x.h, a_dense, g_qkv);
    const bool g_mid = grad_in || g_qkv || a_dense;
    const bool g_mlp_in = c_.parallel_residual ? grad_in : g_mid;
    if (g_mlp_in) bytes += n_.layer_norm(c_.parallel_residual);
    const bool a_up = adapted("mlp.dense_h_to_4h");
    bytes += inputs(x.h, a_up, g_mlp_in);
    const bool g_up = g_mlp_in || a_up;
    if (g_up) bytes += 2 * x.T * x.I;  // GELU's input
    bytes += inputs(x.I, adapted("mlp.dense_4h_to_h"), g_up);
    return bytes + layer_adapters();
  }

  // Outside the layers: no token ids (the embedding is frozen); the final norm; the head's
  // input only for its own adapter; the loss as ever.
  u128 outside() const {
    const Dims& x = n_.dims();
    const bool head = adapted(c_.model_type == "gpt_neox" ? "embed_out" : "lm_head");
    u128 bytes = c_.norm_bias ? n_.layer_norm(false) : rms_frozen(x.T, x.h);
    bytes += inputs(x.h, head, true) + (head ? adapter() : 0);
    if (c_.final_softcap) bytes += 2 * x.T * x.V + 16;  // tanh's output, two scalars
    return bytes + 4 * x.T * x.V + (x.b == 1 ? 8 * (x.s + 1) : 8 * x.T) + 4;
  }

 private:
  const Counter& n_;
  const ModelConfig& c_;
  const LoraShape& lora_;
  Attention attention_;
  const plan::TorchRuntime& rt_;
};

// A rough size first (an overestimate), so that the exact sums cannot wrap 128 bits.
bool too_large(const ModelConfig& c, std::uint64_t s, std::uint64_t b) {
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
                                               plan::Checkpointing checkpointing) {
  const Dims& x = n.dims();
  const u128 per_layer = std::max({saved.dense_layer, saved.moe_layer, saved.first_layer});
  const u128 all = u128(saved.total) - saved.outside - saved.rope_tables;  // every layer
  u128 layers = 0;
  switch (checkpointing) {
    case plan::Checkpointing::none:
      layers = all;
      break;
    case plan::Checkpointing::selective:  // the s² terms recomputed
      layers = all - n.scores() * c.layers;
      break;
    case plan::Checkpointing::full:  // each layer's input, and one layer while recomputed
      layers = 2 * x.T * x.h * c.layers + per_layer;
      break;
  }
  layers += saved.rope_tables;
  const u128 loss = u128(saved.outside) + n.loss_working();
  if (layers + loss > UINT64_MAX) return std::nullopt;
  return ModelActivations{std::uint64_t(per_layer), std::uint64_t(layers), std::uint64_t(loss),
                          std::uint64_t(layers + loss)};
}

}  // namespace

std::string_view attention_name(Attention attention) {
  switch (attention) {
    case Attention::flash:
      return "flash";
    case Attention::sdpa:
      return "sdpa";
    case Attention::eager:
      break;
  }
  return "eager";
}

std::optional<SavedTensors> saved_tensor_bytes(const ModelConfig& c, std::uint64_t s,
                                               std::uint64_t b, Attention attention,
                                               const plan::TorchRuntime& runtime) {
  if (too_large(c, s, b)) return std::nullopt;
  const Counter n(c, s, b, attention, runtime);
  const u128 moe_layers = c.moe_layers(), dense_layers = c.layers - moe_layers;
  const u128 dense = dense_layers > 0 ? n.layer(false) : 0;
  const u128 moe = moe_layers > 0 ? n.layer(true) : 0;
  const u128 outside = n.outside(), rope = n.rope_tables();
  const u128 total = dense * dense_layers + moe * moe_layers + outside + rope;
  if (total > UINT64_MAX) return std::nullopt;
  return SavedTensors{std::uint64_t(dense),   std::uint64_t(moe),
                      std::uint64_t(outside), std::uint64_t(rope),
                      std::uint64_t(total),   std::uint64_t(dense_layers > 0 ? dense : moe)};
}

namespace {

void check_lora_family(const ModelConfig& c, const LoraShape& lora, std::string_view flag) {
  const std::string& t = c.model_type;
  const bool llama_like = t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3" ||
                          t == "phi3" || t == "olmo2" || t == "gemma2" || t == "gemma3_text" ||
                          t == "gpt2" || t == "gpt_neox";
  const bool mixture = t == "mixtral" || t == "qwen2_moe" || t == "qwen3_moe";
  if (!(llama_like || mixture) || c.latent) {
    throw UsageError(std::string(flag) + ": what a LoRA run keeps for backward is counted for " +
                     "gpt2, gpt_neox, llama, mistral, qwen2, qwen3, phi3, olmo2, gemma2, " +
                     "gemma3_text, mixtral, qwen2_moe and qwen3_moe; not yet for " + t);
  }
  if (c.attention_dropout || c.hidden_dropout || c.embedding_dropout) {
    throw UsageError(std::string(flag) + ": a LoRA run with the model's own dropout (the " +
                     "config's attention, residual or embedding dropout) is not counted yet");
  }
  if (lora.rank == 0 || !(lora.dropout >= 0 && lora.dropout < 1)) {
    throw UsageError(std::string(flag) + ": a LoRA rank >= 1 and a dropout in [0, 1)");
  }
}

}  // namespace

std::optional<SavedTensors> lora_saved_tensor_bytes(const ModelConfig& c, std::uint64_t s,
                                                    std::uint64_t b, Attention attention,
                                                    const LoraShape& lora, std::string_view flag,
                                                    const plan::TorchRuntime& runtime) {
  check_lora_family(c, lora, flag);
  if (too_large(c, s, b) || lora.rank > (std::uint64_t(1) << 40)) return std::nullopt;
  const Counter n(c, s, b, attention, runtime);
  const LoraCounter l(n, c, lora, attention, runtime);
  const bool moe_first = c.moe_layers() > 0 && !c.first_layer_dense;
  const u128 moe_layers = c.moe_layers(), dense_layers = c.layers - moe_layers;
  const u128 dense = dense_layers > 0 ? l.layer(true, false) : 0;
  const u128 moe = moe_layers > 0 ? l.layer(true, true) : 0;
  const u128 first = l.layer(lora.input_requires_grad, moe_first);
  const u128 outside = l.outside();
  // The rotary tables are kept by any layer whose q or k needs a gradient: every layer after
  // the first, or the first where it does.
  const bool first_rotates = lora.input_requires_grad || l.adapted("self_attn.q_proj") ||
                             l.adapted("self_attn.k_proj") || l.adapted("self_attn.qkv_proj") ||
                             l.adapted("attention.query_key_value");
  u128 rope = n.rope_tables();
  if (!first_rotates && (c.layers == 1 || c.first_table_alone)) {
    rope -= rope / c.rope_tables;  // the first layer's table, kept by no layer
  }
  const u128 total = first + dense * (dense_layers - (moe_first ? 0 : 1)) +
                     moe * (moe_layers - (moe_first ? 1 : 0)) + outside + rope;
  if (total > UINT64_MAX) return std::nullopt;
  return SavedTensors{std::uint64_t(dense), std::uint64_t(moe),   std::uint64_t(outside),
                      std::uint64_t(rope),  std::uint64_t(total), std::uint64_t(first)};
}

std::optional<ModelActivations> lora_activation_bytes(const ModelConfig& c, std::uint64_t s,
                                                      std::uint64_t b,
                                                      plan::Checkpointing checkpointing,
                                                      Attention attention, const LoraShape& lora,
                                                      std::string_view flag,
                                                      const plan::TorchRuntime& runtime) {
  // Checkpointed layers' inputs need a gradient (transformers makes them so with PEFT).
  LoraShape shape = lora;
  if (checkpointing != plan::Checkpointing::none) shape.input_requires_grad = true;
  const auto saved = lora_saved_tensor_bytes(c, s, b, attention, shape, flag, runtime);
  if (!saved) return std::nullopt;
  return activations_of(*saved, Counter(c, s, b, attention, runtime), c, checkpointing);
}

std::optional<ModelActivations> model_activation_bytes(const ModelConfig& c, std::uint64_t s,
                                                       std::uint64_t b,
                                                       plan::Checkpointing checkpointing,
                                                       Attention attention,
                                                       const plan::TorchRuntime& runtime) {
  const auto saved = saved_tensor_bytes(c, s, b, attention, runtime);
  if (!saved) return std::nullopt;
  return activations_of(*saved, Counter(c, s, b, attention, runtime), c, checkpointing);
}

}  // namespace zerodp::catalog

// What a LoRA run keeps for backward (catalog/lora.h): the full fine-tune's terms
// (activation_counter.h) where a gradient still needs them, the adapters' own.
#include <algorithm>

#include "activation_counter.h"
#include "zerodp/catalog/lora.h"
#include "zerodp/common/error.h"

namespace zerodp::catalog {
namespace {

using saved::activations_of;
using saved::Counter;
using saved::Dims;
using saved::too_large;
using saved::u128;

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
  // What linears sharing one input of `width`, `count` of them adapted, keep of it: the input
  // once (lora_A's), or with dropout each adapter its own dropped copy and, where the input
  // needs a gradient, its mask. A 4-bit base linear (bitsandbytes' MatMul4Bit) keeps its
  // input too wherever that input needs a gradient, adapted or not: the same storage as
  // lora_A's when there is no dropout.
  u128 inputs(u128 width, u128 count, bool grad) const {
    return inputs_of(n_.dims().T, width, count, grad);
  }
  u128 inputs_of(u128 tokens, u128 width, u128 count, bool grad) const {
    const u128 by_4bit = lora_.quantized_base && grad ? 2 * tokens * width : 0;
    if (count == 0) return by_4bit;
    if (lora_.dropout == 0) return 2 * tokens * width;
    return count * (2 + (grad ? rt_.mask_bytes : 0)) * tokens * width + by_4bit;
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
    // The head stays 16-bit in a QLoRA run: its input is kept for its adapter only (with
    // dropout, the copy and the mask: the input needs a gradient).
    if (head) {
      bytes += (lora_.dropout == 0 ? 2 : 2 + rt_.mask_bytes) * x.T * x.h + adapter();
    }
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

}  // namespace zerodp::catalog

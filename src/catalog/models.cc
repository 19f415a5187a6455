// config.json's fields, family by family, and the parameters their modules hold. The
// activations are in model_activations.cc, the catalogue's table in catalogue.cc.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "json_object.h"
#include "zerodp/catalog/models.h"
#include "zerodp/common/error.h"
#include "zerodp/common/json_text.h"
#include "zerodp/common/units.h"

namespace zerodp::catalog {
namespace {

using json = nlohmann::json;

constexpr std::string_view kFamilies =
    "gpt2, gpt_neox, llama, mistral, qwen2, qwen3, phi3, olmo2, gemma2, gemma3_text, mixtral, "
    "qwen2_moe, qwen3_moe, deepseek_v2";

std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

// The config's fields, each named in the error when it is missing or not what it must be.
// A value of the file as a message shows it: JSON, bounded.
std::string shown_value(const json& v) {
  return cut_long(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

class Fields {
 public:
  Fields(const json& j, const std::string& source) : j_(j), source_(source) {}
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw UsageError(source_ + ": \"" + field + "\" " + what);
  }
  bool given(const std::string& field) const { return j_.contains(field) && !j_[field].is_null(); }
  // Every size of a config is at most kMaxSize: far above any published model's, far enough
  // below 2^64 that products of a few of them are exact.
  static constexpr std::uint64_t kMaxSize = std::uint64_t{1} << 32;
  std::uint64_t whole(const std::string& field, std::uint64_t min = 1) const {
    if (!given(field)) fail(field, "is missing (a whole number)");
    return checked_whole(field, j_[field], min);
  }
  std::uint64_t whole_or(const std::string& field, std::uint64_t fallback,
                         std::uint64_t min = 1) const {
    return given(field) ? whole(field, min) : fallback;
  }
  bool flag_or(const std::string& field, bool fallback) const {
    if (!given(field)) return fallback;
    if (!j_[field].is_boolean())
      fail(field, "must be true or false, got " + shown_value(j_[field]));
    return j_[field].get<bool>();
  }
  // A dropout probability above 0 means masks kept for backward.
  bool dropout_or(const std::string& field, double fallback) const {
    if (!given(field)) return fallback > 0;
    const json& v = j_[field];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1) {
      fail(field, "must be a probability in [0, 1), got " + shown_value(v));
    }
    return v.get<double>() > 0;
  }
  // A share of a head's dimensions (rotary_pct, partial_rotary_factor): a number in (0, 1].
  double fraction_or(const std::string& field, double fallback) const {
    if (!given(field)) return fallback;
    const json& v = j_[field];
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1) {
      fail(field, "must be a number in (0, 1], got " + shown_value(v));
    }
    return v.get<double>();
  }
  std::string text_or(const std::string& field, const std::string& fallback) const {
    if (!given(field)) return fallback;
    if (!j_[field].is_string()) fail(field, "must be a string, got " + shown_value(j_[field]));
    return j_[field].get<std::string>();
  }
  // gemma3's layer_types: one "sliding_attention" or "full_attention" per layer; which of the
  // two occur, and how many layers are of the first one's kind. Bounded by the file, not by
  // the layers it claims.
  struct LayerKinds {
    bool sliding = false, full = false;
    std::uint64_t like_first = 0;
  };
  LayerKinds sliding_and_full(const std::string& field, std::uint64_t layers) const {
    const json& v = j_[field];
    if (!v.is_array() || v.size() != layers) {
      fail(field, "must be a list of " + std::to_string(layers) +
                      " \"sliding_attention\" or \"full_attention\", got " + shown_value(v));
    }
    LayerKinds kinds;
    for (const json& e : v) {
      if (e == "sliding_attention") {
        kinds.sliding = true;
      } else if (e == "full_attention") {
        kinds.full = true;
      } else {
        fail(field,
             "holds " + shown_value(e) + "; expected \"sliding_attention\" or \"full_attention\"");
      }
      kinds.like_first += e == v.front() ? 1 : 0;
    }
    return kinds;
  }
  // A positive number that switches a computation on (soft-capping); null or absent is off.
  bool positive_or_null(const std::string& field, bool fallback) const {
    if (!j_.contains(field)) return fallback;
    const json& v = j_[field];
    if (v.is_null()) return false;
    if (!v.is_number() || !(v.get<double>() > 0)) {
      fail(field, "must be a positive number or null, got " + shown_value(v));
    }
    return true;
  }
  // A list of layer indices, each below `layers`, none twice.
  std::set<std::uint64_t> layer_list(const std::string& field, std::uint64_t layers) const {
    std::set<std::uint64_t> out;
    if (!given(field)) return out;
    const json& v = j_[field];
    if (!v.is_array()) fail(field, "must be a list of layer indices, got " + shown_value(v));
    for (const json& e : v) {
      const std::uint64_t i = checked_whole(field, e, 0);
      if (i >= layers) {
        fail(field, "holds layer " + std::to_string(i) + "; the model has " +
                        std::to_string(layers) + " (0 to " + std::to_string(layers - 1) + ")");
      }
      if (!out.insert(i).second) fail(field, "holds layer " + std::to_string(i) + " twice");
    }
    return out;
  }

 private:
  std::uint64_t checked_whole(const std::string& field, const json& v, std::uint64_t min) const {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min) {
      fail(field, "must be a whole number >= " + std::to_string(min) + ", got " + shown_value(v));
    }
    if (v.get<std::uint64_t>() > kMaxSize) {
      fail(field, "must be at most " + std::to_string(kMaxSize) + " (2^32), got " + shown_value(v));
    }
    return v.get<std::uint64_t>();
  }
  const json& j_;
  const std::string& source_;
};

// GPT-2: learned positions, fused qkv, biases everywhere, GPT2Config's dropout by default.
void read_gpt2(const Fields& f, ModelConfig& c) {
  c.vocab = f.whole("vocab_size");
  c.hidden = f.whole("n_embd");
  c.layers = f.whole("n_layer");
  c.heads = f.whole("n_head");
  c.positions = f.whole("n_positions");
  c.intermediate = f.whole_or("n_inner", 4 * c.hidden);
  c.tied_embeddings = f.flag_or("tie_word_embeddings", true);
  c.fused_qkv = true;
  c.qkv_bias = c.out_bias = c.mlp_bias = c.norm_bias = true;
  c.attention_dropout = f.dropout_or("attn_pdrop", 0.1);  // GPT2Config's defaults
  c.hidden_dropout = f.dropout_or("resid_pdrop", 0.1);
  c.embedding_dropout = f.dropout_or("embd_pdrop", 0.1);
  // ACT2FN: gelu_new (the default) and gelu_fast are written as several operations.
  const std::string act = f.text_or("activation_function", "gelu_new");
  c.gelu_formula = act == "gelu_new" || act == "gelu_fast";
}

void read_gpt_neox(const Fields& f, ModelConfig& c) {
  c.vocab = f.whole("vocab_size");
  c.hidden = f.whole("hidden_size");
  c.layers = f.whole("num_hidden_layers");
  c.heads = f.whole("num_attention_heads");
  c.intermediate = f.whole("intermediate_size");
  c.tied_embeddings = f.flag_or("tie_word_embeddings", false);
  c.fused_qkv = true;
  c.qkv_bias = c.out_bias = f.flag_or("attention_bias", true);
  c.mlp_bias = c.norm_bias = true;
  c.parallel_residual = f.flag_or("use_parallel_residual", true);
  c.attention_dropout = f.dropout_or("attention_dropout", 0.0);
  c.hidden_dropout = c.embedding_dropout = f.dropout_or("hidden_dropout", 0.0);
}

// Which layers of a Qwen mixture are sparse: those not in mlp_only_layers whose number
// (from 1) is a multiple of decoder_sparse_step; the rest keep the dense MLP.
void read_qwen_mixture(const Fields& f, ModelConfig& c) {
  c.experts = f.whole("num_experts");
  c.experts_per_token = f.whole("num_experts_per_tok");
  c.expert_intermediate = f.whole("moe_intermediate_size");
  // Counted, not walked: a config may claim 2^32 layers.
  const std::uint64_t step = f.whole_or("decoder_sparse_step", 1);
  const std::set<std::uint64_t> dense = f.layer_list("mlp_only_layers", c.layers);
  std::uint64_t sparse = c.layers / step;
  for (const std::uint64_t i : dense) sparse -= (i + 1) % step == 0 ? 1 : 0;
  c.dense_layers = c.layers - sparse;
  c.first_layer_dense = dense.count(0) > 0 || 1 % step != 0;
  if (c.dense_layers > 0) c.intermediate = f.whole("intermediate_size");
  if (c.model_type == "qwen2_moe") {
    c.shared_intermediate = f.whole_or("shared_expert_intermediate_size", 0, 0);
    c.shared_expert_gate = c.shared_intermediate > 0;
  }
}

// The llama family: llama, mistral, qwen2 (biases on q, k, v), qwen3, phi3, olmo2, gemma2,
// gemma3_text, and the mixtures built on them (mixtral, qwen2_moe, qwen3_moe).
void read_llama_family(const Fields& f, ModelConfig& c) {
  const std::string& t = c.model_type;
  const bool gemma = t == "gemma2" || t == "gemma3_text";
  c.vocab = f.whole("vocab_size");
  c.hidden = f.whole("hidden_size");
  c.layers = f.whole("num_hidden_layers");
  c.heads = f.whole("num_attention_heads");
  c.kv_heads = f.whole_or("num_key_value_heads", c.heads);
  const bool moe = t == "mixtral" || t == "qwen2_moe" || t == "qwen3_moe";
  if (!moe || t == "mixtral") c.intermediate = f.whole("intermediate_size");
  c.tied_embeddings = f.flag_or("tie_word_embeddings", gemma);
  c.gated_mlp = true;
  const bool qwen2 = t == "qwen2" || t == "qwen2_moe";
  c.qkv_bias = qwen2 || f.flag_or("attention_bias", false);
  c.out_bias = !qwen2 && f.flag_or("attention_bias", false);
  c.mlp_bias = f.flag_or("mlp_bias", false);
  c.fused_qkv = c.fused_gate_up = t == "phi3";
  if (t == "qwen3" || t == "qwen3_moe" || t == "gemma3_text") c.qk_norm = QkNorm::per_head;
  if (t == "olmo2") c.qk_norm = QkNorm::whole;
  if (gemma) c.norms_per_layer = 4;
  c.attention_dropout = f.dropout_or("attention_dropout", 0.0);
  // Phi3Model builds embed_dropout from embd_pdrop but its forward never applies it.
  if (t == "phi3") c.hidden_dropout = f.dropout_or("resid_pdrop", 0.0);
  if (t == "gemma3_text") {
    // Both cos/sin tables are kept when both kinds of layer occur: by layer_types, or by
    // sliding_window_pattern (every 6th layer global by default).
    if (f.given("layer_types")) {
      const auto kinds = f.sliding_and_full("layer_types", c.layers);
      c.rope_tables = kinds.sliding && kinds.full ? 2 : 1;
      c.first_table_alone = c.rope_tables == 2 && kinds.like_first == 1;
    } else {
      const std::uint64_t pattern = f.whole_or("sliding_window_pattern", 6);
      c.rope_tables = pattern > 1 && c.layers >= pattern ? 2 : 1;
      // Layer 0 is a sliding one; the others of its kind are those off the pattern.
      c.first_table_alone = c.rope_tables == 2 && c.layers - c.layers / pattern == 1;
    }
  }
  if (gemma) {
    // Gemma2Config soft-caps by default (50 and 30); Gemma3TextConfig does not.
    c.attention_softcap = f.positive_or_null("attn_logit_softcapping", t == "gemma2");
    c.final_softcap = f.positive_or_null("final_logit_softcapping", t == "gemma2");
  }
  if (t == "mixtral") {
    c.experts = f.whole("num_local_experts");
    c.first_layer_dense = false;
    c.experts_per_token = f.whole("num_experts_per_tok");
    c.expert_intermediate = c.intermediate;
    c.norm_topk_prob = true;  // MixtralSparseMoeBlock always renormalises
  } else if (moe) {
    read_qwen_mixture(f, c);
    c.norm_topk_prob = f.flag_or("norm_topk_prob", false);
  }
}

// DeepSeek-V2: latent attention and a mixture after the first dense layers.
void read_deepseek_v2(const Fields& f, ModelConfig& c) {
  c.vocab = f.whole("vocab_size");
  c.hidden = f.whole("hidden_size");
  c.layers = f.whole("num_hidden_layers");
  c.heads = f.whole("num_attention_heads");
  c.intermediate = f.whole("intermediate_size");
  c.tied_embeddings = f.flag_or("tie_word_embeddings", false);
  c.gated_mlp = true;
  c.qkv_bias = c.out_bias = f.flag_or("attention_bias", false);
  c.attention_dropout = f.dropout_or("attention_dropout", 0.0);
  LatentAttention l;
  l.q_rank = f.whole_or("q_lora_rank", 0);
  l.kv_rank = f.whole("kv_lora_rank");
  l.rope_dim = f.whole("qk_rope_head_dim");
  l.nope_dim = f.whole("qk_nope_head_dim");
  l.v_dim = f.whole("v_head_dim");
  c.latent = l;
  // After decompression every head has its own k (nope and rope parts) and v.
  c.kv_heads = c.heads;
  c.head_dim = l.nope_dim + l.rope_dim;
  c.rotary_dim = l.rope_dim;
  if (!f.given("n_routed_experts")) return;  // a dense model
  c.norm_topk_prob = f.flag_or("norm_topk_prob", false);
  const std::string topk = f.text_or("topk_method", "greedy");
  if (topk != "greedy" && topk != "group_limited_greedy") {
    f.fail("topk_method", "must be \"greedy\" or \"group_limited_greedy\", got " + shown(topk));
  }
  c.group_limited_routing = topk == "group_limited_greedy";
  c.experts = f.whole("n_routed_experts");
  c.experts_per_token = f.whole("num_experts_per_tok");
  c.expert_intermediate = f.whole("moe_intermediate_size");
  c.shared_intermediate = mul(f.whole_or("n_shared_experts", 0, 0), c.expert_intermediate);
  // Mixtures at the multiples of moe_layer_freq from first_k_dense_replace on: counted, not
  // walked.
  const std::uint64_t first_dense = std::min(f.whole_or("first_k_dense_replace", 0, 0), c.layers);
  const std::uint64_t freq = f.whole_or("moe_layer_freq", 1);
  auto multiples_below = [freq](std::uint64_t n) { return (n + freq - 1) / freq; };
  c.dense_layers = c.layers - (multiples_below(c.layers) - multiples_below(first_dense));
  c.first_layer_dense = first_dense > 0;
}

// The heads' grouping and width: key-value heads divide the heads, and without head_dim the
// heads divide the hidden size.
void read_heads(const Fields& f, ModelConfig& c) {
  if (c.latent) return;  // its widths are its own fields
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  if (c.heads % c.kv_heads != 0) {
    f.fail("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(c.heads) +
                                      "), got " + std::to_string(c.kv_heads));
  }
  if (f.given("head_dim")) {
    c.head_dim = f.whole("head_dim");
    return;
  }
  if (c.hidden % c.heads != 0) {
    f.fail(
        c.model_type == "gpt2" ? "n_head" : "num_attention_heads",
        "must divide the hidden size (" + std::to_string(c.hidden) + ") when no head_dim is given");
  }
  c.head_dim = c.hidden / c.heads;
}

void check_experts(const Fields& f, const ModelConfig& c) {
  if (c.experts == 0 || c.experts_per_token <= c.experts) return;
  const char* experts = c.model_type == "mixtral"       ? "num_local_experts"
                        : c.model_type == "deepseek_v2" ? "n_routed_experts"
                                                        : "num_experts";
  f.fail("num_experts_per_tok", "must be at most " + std::string(experts) + " (" +
                                    std::to_string(c.experts) + "), got " +
                                    std::to_string(c.experts_per_token));
}

// One module: its weight's and its bias's elements, and how many of it there are.
// A module's own parameters; a linear (nn.Linear, or gpt2's Conv1D) also has its name in the
// layer, as the family's implementation calls it, and its shape.
struct Module {
  std::uint64_t weight = 0, bias = 0, copies = 1;
  std::string_view name = {};  // empty for norms, embeddings and DeepSeek's router
  std::uint64_t in = 0, out = 0;
  std::uint64_t params() const { return mul(add(weight, bias), copies); }
};

// A linear of in x out, with or without its bias.
Module linear(std::string_view name, std::uint64_t in, std::uint64_t out, bool bias,
              std::uint64_t copies = 1) {
  return {mul(in, out), bias ? out : 0, copies, name, in, out};
}

// The names a family gives its attention's and MLP's linears.
struct LinearNames {
  std::string_view q, k, v, qkv, out, gate, up, gate_up, down;
};
LinearNames linear_names(const ModelConfig& c) {
  if (c.model_type == "gpt2") {
    return {.qkv = "attn.c_attn", .out = "attn.c_proj", .up = "mlp.c_fc", .down = "mlp.c_proj"};
  }
  if (c.model_type == "gpt_neox") {
    return {.qkv = "attention.query_key_value",
            .out = "attention.dense",
            .up = "mlp.dense_h_to_4h",
            .down = "mlp.dense_4h_to_h"};
  }
  return {.q = "self_attn.q_proj",
          .k = "self_attn.k_proj",
          .v = "self_attn.v_proj",
          .qkv = "self_attn.qkv_proj",
          .out = "self_attn.o_proj",
          .gate = "mlp.gate_proj",
          .up = "mlp.up_proj",
          .gate_up = "mlp.gate_up_proj",
          .down = "mlp.down_proj"};
}

// Where a layer's MLPs sit: the dense one, a mixture's experts, its shared expert.
enum class MlpPlace { dense, experts, shared };

// A mixture's linears are named under their module: Mixtral's experts w1 (gate), w3 (up) and
// w2 (down), Qwen's and DeepSeek's gate_proj, up_proj and down_proj; "*" is the expert's index.
LinearNames mlp_names(const ModelConfig& c, MlpPlace place) {
  LinearNames n = linear_names(c);
  if (place == MlpPlace::dense) return n;
  if (c.model_type == "mixtral") {
    return {.gate = "block_sparse_moe.experts.*.w1",
            .up = "block_sparse_moe.experts.*.w3",
            .down = "block_sparse_moe.experts.*.w2"};
  }
  if (place == MlpPlace::experts) {
    return {.gate = "mlp.experts.*.gate_proj",
            .up = "mlp.experts.*.up_proj",
            .down = "mlp.experts.*.down_proj"};
  }
  if (c.model_type == "deepseek_v2") {
    return {.gate = "mlp.shared_experts.gate_proj",
            .up = "mlp.shared_experts.up_proj",
            .down = "mlp.shared_experts.down_proj"};
  }
  return {.gate = "mlp.shared_expert.gate_proj",
          .up = "mlp.shared_expert.up_proj",
          .down = "mlp.shared_expert.down_proj"};
}

// The modules of one MLP of width `width`: gate (or a fused gate-up), up, down.
void add_mlp(const ModelConfig& c, std::uint64_t width, std::uint64_t copies, MlpPlace place,
             std::vector<Module>& out) {
  const std::uint64_t h = c.hidden;
  const LinearNames n = mlp_names(c, place);
  if (c.fused_gate_up) {
    out.push_back(linear(n.gate_up, h, mul(2, width), c.mlp_bias, copies));
  } else {
    if (c.gated_mlp) out.push_back(linear(n.gate, h, width, c.mlp_bias, copies));
    out.push_back(linear(n.up, h, width, c.mlp_bias, copies));
  }
  out.push_back(linear(n.down, width, h, c.mlp_bias, copies));
}

// The modules of one layer, as the family's implementation builds them; `experts` of a
// mixture's layer counted (all of them, or the ones a token passes).
std::vector<Module> layer_modules(const ModelConfig& c, bool moe_layer, std::uint64_t experts) {
  const std::uint64_t h = c.hidden, q = mul(c.heads, c.head_dim), k = mul(c.kv_heads, c.head_dim);
  const LinearNames n = linear_names(c);
  std::vector<Module> m;
  m.push_back({h, c.norm_bias ? h : 0, c.norms_per_layer});
  if (c.latent) {
    const LatentAttention& l = *c.latent;
    const std::uint64_t q_out = mul(c.heads, l.nope_dim + l.rope_dim);
    if (l.q_rank > 0) {
      m.push_back(linear("self_attn.q_a_proj", h, l.q_rank, c.qkv_bias));
      m.push_back({l.q_rank, 0, 1});  // q_a_layernorm
      m.push_back(linear("self_attn.q_b_proj", l.q_rank, q_out, false));
    } else {
      m.push_back(linear(n.q, h, q_out, false));
    }
    m.push_back(linear("self_attn.kv_a_proj_with_mqa", h, l.kv_rank + l.rope_dim, c.qkv_bias));
    m.push_back({l.kv_rank, 0, 1});  // kv_a_layernorm
    m.push_back(
        linear("self_attn.kv_b_proj", l.kv_rank, mul(c.heads, l.nope_dim + l.v_dim), false));
    m.push_back(linear(n.out, mul(c.heads, l.v_dim), h, c.out_bias));
  } else {
    if (c.fused_qkv) {
      m.push_back(linear(n.qkv, h, add(q, mul(2, k)), c.qkv_bias));
    } else {
      m.push_back(linear(n.q, h, q, c.qkv_bias));
      m.push_back(linear(n.k, h, k, c.qkv_bias));
      m.push_back(linear(n.v, h, k, c.qkv_bias));
    }
    m.push_back(linear(n.out, q, h, c.out_bias));
  }
  if (c.qk_norm == QkNorm::per_head) m.push_back({c.head_dim, 0, 2});
  if (c.qk_norm == QkNorm::whole) {
    m.push_back({q, 0, 1});
    m.push_back({k, 0, 1});
  }
  if (!moe_layer) {
    add_mlp(c, c.intermediate, 1, MlpPlace::dense, m);
    return m;
  }
  add_mlp(c, c.expert_intermediate, experts, MlpPlace::experts, m);
  // The router: an nn.Linear but in DeepSeek-V2 (MoEGate, a module holding a weight).
  if (c.model_type == "deepseek_v2") {
    m.push_back({mul(h, c.experts), 0, 1});
  } else {
    m.push_back(linear(c.model_type == "mixtral" ? "block_sparse_moe.gate" : "mlp.gate", h,
                       c.experts, false));
  }
  if (c.shared_intermediate > 0) add_mlp(c, c.shared_intermediate, 1, MlpPlace::shared, m);
  if (c.shared_expert_gate) m.push_back(linear("mlp.shared_expert_gate", h, 1, false));
  return m;
}

std::string_view head_name(const ModelConfig& c) {
  return c.model_type == "gpt_neox" ? "embed_out" : "lm_head";
}

// Outside the layers: token (and position) embeddings, the final norm, an untied head.
std::vector<Module> outside_modules(const ModelConfig& c) {
  const std::uint64_t h = c.hidden;
  std::vector<Module> m = {{mul(c.vocab, h), 0, 1}, {h, c.norm_bias ? h : 0, 1}};
  if (c.positions > 0) m.push_back({mul(c.positions, h), 0, 1});
  if (!c.tied_embeddings) m.push_back(linear(head_name(c), h, c.vocab, false));
  return m;
}

std::uint64_t sum(const std::vector<Module>& modules) {
  std::uint64_t n = 0;
  for (const Module& m : modules) n = add(n, m.params());
  return n;
}

}  // namespace

ModelConfig parse_model_config(std::string_view json_text, const std::string& source) {
  const json j = parse_json_object(json_text, source, "a config.json");
  if (!j.contains("model_type") || !j["model_type"].is_string()) {
    throw UsageError(source + ": \"model_type\" is missing; supported: " + std::string(kFamilies));
  }
  const Fields f(j, source);
  ModelConfig c;
  c.model_type = j["model_type"].get<std::string>();
  const std::string& t = c.model_type;
  static constexpr std::string_view kLlamaFamily[] = {
      "llama",  "mistral",     "qwen2",   "qwen3",     "phi3",     "olmo2",
      "gemma2", "gemma3_text", "mixtral", "qwen2_moe", "qwen3_moe"};
  if (t == "gpt2") {
    read_gpt2(f, c);
  } else if (t == "gpt_neox") {
    read_gpt_neox(f, c);
  } else if (t == "deepseek_v2") {
    read_deepseek_v2(f, c);
  } else if (std::find(std::begin(kLlamaFamily), std::end(kLlamaFamily), t) !=
             std::end(kLlamaFamily)) {
    read_llama_family(f, c);
  } else {
    // As it is written in the file, unless it holds control characters or runs long.
    const std::string named = printable(t, 64) == t ? "\"" + t + "\"" : shown(t);
    throw UsageError(source + ": model_type " + named +
                     " is not supported; supported: " + std::string(kFamilies));
  }
  read_heads(f, c);
  // The rotary dimensions of a head, truncated as the implementations do (int(d * share)).
  if (t == "gpt_neox") {
    c.rotary_dim = static_cast<std::uint64_t>(c.head_dim * f.fraction_or("rotary_pct", 0.25));
  } else if (t == "phi3") {
    c.rotary_dim =
        static_cast<std::uint64_t>(c.head_dim * f.fraction_or("partial_rotary_factor", 1.0));
  } else if (t != "gpt2" && !c.latent) {
    c.rotary_dim = c.head_dim;
  }
  check_experts(f, c);
  // Sizes each in range can still multiply beyond what a plan's bytes hold.
  constexpr std::uint64_t kMaxParams = std::uint64_t{1} << 56;
  if (const std::uint64_t n = model_params(c).params; n > kMaxParams) {
    throw UsageError(source + ": its sizes give " + units::format_count(n) +
                     " parameters, more than the 2^56 zerodp plans for; check num_hidden_layers, "
                     "hidden_size, intermediate_size and vocab_size");
  }
  return c;
}

ModelParams model_params(const ModelConfig& c) {
  const std::uint64_t moe_layers = c.moe_layers(), dense_layers = c.layers - moe_layers;
  const std::vector<Module> dense = layer_modules(c, false, 0);
  const std::vector<Module> mixture = layer_modules(c, true, c.experts);
  const std::vector<Module> outside = outside_modules(c);
  const std::uint64_t outside_params = sum(outside);
  ModelParams p;
  p.embedding_params = add(mul(c.vocab, c.hidden), mul(c.positions, c.hidden));
  p.per_layer_params = moe_layers > 0 ? sum(mixture) : sum(dense);
  p.outside_params = outside_params;
  p.params = add(add(mul(dense_layers, sum(dense)), mul(moe_layers, sum(mixture))), outside_params);
  const std::uint64_t active_mixture =
      moe_layers > 0 ? sum(layer_modules(c, true, c.experts_per_token)) : 0;
  p.active_params =
      add(add(mul(dense_layers, sum(dense)), mul(moe_layers, active_mixture)), outside_params);
  std::uint64_t largest = 0;
  for (const auto* modules : {&dense, &mixture, &outside}) {
    for (const Module& m : *modules) largest = std::max(largest, add(m.weight, m.bias));
  }
  p.largest_layer_params = largest;
  return p;
}

std::vector<LinearLayer> linear_layers(const ModelConfig& c) {
  std::vector<LinearLayer> out;
  auto take = [&](const std::vector<Module>& modules, std::uint64_t layers) {
    for (const Module& m : modules) {
      if (m.name.empty() || layers == 0) continue;
      out.push_back({m.name, m.in, m.out, mul(m.copies, layers), m.bias > 0, false});
    }
  };
  take(layer_modules(c, false, 0), c.layers - c.moe_layers());
  take(layer_modules(c, true, c.experts), c.moe_layers());
  // The head is a linear also when tied: transformers builds it and points its weight at the
  // embeddings'.
  out.push_back({head_name(c), c.hidden, c.vocab, 1, false, true});
  return out;
}

TrainingFlops training_flops(const ModelConfig& c, std::uint64_t seq_len,
                             plan::Checkpointing checkpointing) {
  const ModelParams p = model_params(c);
  TrainingFlops f;
  f.params = double(p.active_params - p.embedding_params) +
             (c.tied_embeddings ? double(c.vocab) * double(c.hidden) : 0.0);
  double qk = double(c.heads) * double(c.head_dim), v = qk;
  if (c.latent) {
    qk = double(c.heads) * double(c.latent->nope_dim + c.latent->rope_dim);
    v = double(c.heads) * double(c.latent->v_dim);
  }
  const double s = double(seq_len), layers = double(c.layers);
  f.attention = 2 * s * qk + 2 * s * v;
  f.model = 6 * f.params + 3 * layers * f.attention;
  switch (checkpointing) {
    case plan::Checkpointing::none:
      f.hardware = f.model;
      break;
    case plan::Checkpointing::selective:
      f.hardware = f.model + layers * f.attention;
      break;
    case plan::Checkpointing::full:
      f.hardware = f.model + 2 * f.params + layers * f.attention;
      break;
  }
  return f;
}

std::uint64_t small_tensor_params(const ModelConfig& c, std::uint64_t max_numel) {
  // Weights and biases are tensors of their own: a bias can be small where its weight is not.
  auto small = [max_numel](const std::vector<Module>& modules) {
    std::uint64_t n = 0;
    for (const Module& m : modules) {
      if (m.weight <= max_numel) n = add(n, mul(m.weight, m.copies));
      if (m.bias > 0 && m.bias <= max_numel) n = add(n, mul(m.bias, m.copies));
    }
    return n;
  };
  const std::uint64_t moe_layers = c.moe_layers();
  return add(add(mul(c.layers - moe_layers, small(layer_modules(c, false, 0))),
                 mul(moe_layers, small(layer_modules(c, true, c.experts)))),
             small(outside_modules(c)));
}

std::uint64_t reuse_kept_params(const ModelConfig& c, std::uint64_t distance) {
  if (distance == 0) return 0;
  // A module is kept when the elements after it, `after`, satisfy 2·after < distance.
  const std::uint64_t most_after = (distance - 1) / 2;
  std::uint64_t after = 0, kept = 0;
  bool done = false;
  // `copies` modules of `numel` each, one after the other.
  auto visit = [&](std::uint64_t numel, std::uint64_t copies = 1) {
    if (done || copies == 0) return;
    if (after > most_after) {
      done = true;
      return;
    }
    const std::uint64_t taken =
        numel == 0 ? copies : std::min(copies, (most_after - after) / numel + 1);
    kept = add(kept, mul(taken, numel));
    after = add(after, mul(taken, numel));
    if (taken < copies) done = true;
  };
  visit(mul(c.vocab, c.hidden));                 // the head (the embedding itself when tied)
  visit(c.norm_bias ? 2 * c.hidden : c.hidden);  // the final norm
  // The layers from the last: whole layers in one step while every module of them is kept,
  // then module by module.
  auto walk = [&](std::uint64_t count, const std::vector<Module>& modules) {
    const std::uint64_t total = sum(modules);
    if (done || count == 0 || total == 0) return;
    if (after <= most_after) {
      const std::uint64_t whole = std::min(count, (most_after - after) / total);
      kept = add(kept, mul(whole, total));
      after = add(after, mul(whole, total));
      count -= whole;
    }
    for (std::uint64_t i = 0; i < count && !done; ++i) {
      for (auto m = modules.rbegin(); m != modules.rend(); ++m) {
        visit(add(m->weight, m->bias), m->copies);
      }
    }
  };
  walk(c.moe_layers(), layer_modules(c, true, c.experts));
  walk(c.layers - c.moe_layers(), layer_modules(c, false, 0));
  visit(mul(c.positions, c.hidden));
  if (!c.tied_embeddings) visit(mul(c.vocab, c.hidden));  // the embedding, unless the head
  return std::min(kept, model_params(c).params);
}

}  // namespace zerodp::catalog

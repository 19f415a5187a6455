// config.json's fields, family by family, into a ModelConfig: each field named in the error
// when it is missing or not what it must be. The parameters the config's modules hold are
// counted in models.cc, the activations in model_activations.cc; the catalogue's table is
// catalogue.cc.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "json_object.h"
#include "zerodp/catalog/models.h"
#include "zerodp/common/error.h"
#include "zerodp/common/json_text.h"
#include "zerodp/common/saturating.h"
#include "zerodp/common/units.h"

namespace zerodp::catalog {
namespace {

using json = nlohmann::json;

constexpr std::string_view kFamilies =
    "gpt2, gpt_neox, llama, mistral, qwen2, qwen3, phi3, olmo2, gemma2, gemma3_text, mixtral, "
    "qwen2_moe, qwen3_moe, deepseek_v2";

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

// The sizes every family but GPT-2 names alike (transformers' PretrainedConfig attributes).
void read_sizes(const Fields& f, ModelConfig& c) {
  c.vocab = f.whole("vocab_size");
  c.hidden = f.whole("hidden_size");
  c.layers = f.whole("num_hidden_layers");
  c.heads = f.whole("num_attention_heads");
}

void read_gpt_neox(const Fields& f, ModelConfig& c) {
  read_sizes(f, c);
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
  read_sizes(f, c);
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
  read_sizes(f, c);
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
  c.shared_intermediate =
      saturating_mul(f.whole_or("n_shared_experts", 0, 0), c.expert_intermediate);
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

}  // namespace zerodp::catalog

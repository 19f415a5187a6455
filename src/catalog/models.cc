#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <vector>

#include "zerodp/catalog/models.h"
#include "zerodp/catalog/names.h"
#include "zerodp/common/error.h"
#include "zerodp/common/json_text.h"
#include "zerodp/common/units.h"

namespace zerodp::catalog {
namespace {

using json = nlohmann::json;

constexpr std::string_view kFamilies = "gpt2, gpt_neox, llama, mistral, qwen2, mixtral";

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
  // Every size of a config is at most kMaxSize: far above any published model's, far enough
  // below 2^64 that products of a few of them are exact.
  static constexpr std::uint64_t kMaxSize = std::uint64_t{1} << 32;
  std::uint64_t whole(const std::string& field, std::uint64_t min = 1) const {
    if (!j_.contains(field) || j_[field].is_null()) fail(field, "is missing (a whole number)");
    const json& v = j_[field];
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min) {
      fail(field, "must be a whole number >= " + std::to_string(min) + ", got " + shown_value(v));
    }
    if (v.get<std::uint64_t>() > kMaxSize) {
      fail(field, "must be at most " + std::to_string(kMaxSize) + " (2^32), got " + shown_value(v));
    }
    return v.get<std::uint64_t>();
  }
  std::uint64_t whole_or(const std::string& field, std::uint64_t fallback) const {
    if (!j_.contains(field) || j_[field].is_null()) return fallback;
    return whole(field);
  }
  bool flag_or(const std::string& field, bool fallback) const {
    if (!j_.contains(field) || j_[field].is_null()) return fallback;
    if (!j_[field].is_boolean())
      fail(field, "must be true or false, got " + shown_value(j_[field]));
    return j_[field].get<bool>();
  }
  // A dropout probability above 0 means masks kept for backward.
  bool dropout_or(const std::string& field, double fallback) const {
    if (!j_.contains(field) || j_[field].is_null()) return fallback > 0;
    const json& v = j_[field];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1) {
      fail(field, "must be a probability in [0, 1), got " + shown_value(v));
    }
    return v.get<double>() > 0;
  }

 private:
  const json& j_;
  const std::string& source_;
};

// The attention's q, k, v, o and the MLP's linears, as matrices with their biases.
struct Block {
  std::uint64_t q = 0, kv = 0, o = 0;     // each of k and v is kv
  std::uint64_t mlp_in = 0, mlp_out = 0;  // one up (or gate) linear, the down linear
  std::uint64_t norms = 0;
};

Block block_of(const ModelConfig& c) {
  const std::uint64_t h = c.hidden, q_width = mul(c.heads, c.head_dim),
                      kv_width = mul(c.kv_heads, c.head_dim);
  Block b;
  b.q = add(mul(h, q_width), c.qkv_bias ? q_width : 0);
  b.kv = add(mul(h, kv_width), c.qkv_bias ? kv_width : 0);
  b.o = add(mul(q_width, h), c.out_bias ? h : 0);
  b.mlp_in = add(mul(h, c.intermediate), c.mlp_bias ? c.intermediate : 0);
  b.mlp_out = add(mul(c.intermediate, h), c.mlp_bias ? h : 0);
  b.norms = mul(2, c.norm_bias ? mul(2, h) : h);
  return b;
}

// GPT-2: learned positions, fused qkv, biases everywhere, GPT2Config's dropout by default.
void read_gpt2(const Fields& f, ModelConfig& c) {
  c.vocab = f.whole("vocab_size");
  c.hidden = f.whole("n_embd");
  c.layers = f.whole("n_layer");
  c.heads = f.whole("n_head");
  c.positions = f.whole("n_positions");
  c.intermediate = f.whole_or("n_inner", 4 * c.hidden);
  c.tied_embeddings = f.flag_or("tie_word_embeddings", true);
  c.qkv_bias = c.out_bias = c.mlp_bias = c.norm_bias = true;
  c.attention_dropout = f.dropout_or("attn_pdrop", 0.1);  // GPT2Config's defaults
  c.hidden_dropout = f.dropout_or("resid_pdrop", 0.1);
}

void read_gpt_neox(const Fields& f, ModelConfig& c) {
  c.vocab = f.whole("vocab_size");
  c.hidden = f.whole("hidden_size");
  c.layers = f.whole("num_hidden_layers");
  c.heads = f.whole("num_attention_heads");
  c.intermediate = f.whole("intermediate_size");
  c.tied_embeddings = f.flag_or("tie_word_embeddings", false);
  c.qkv_bias = c.out_bias = f.flag_or("attention_bias", true);
  c.mlp_bias = c.norm_bias = true;
  c.parallel_residual = f.flag_or("use_parallel_residual", true);
  c.attention_dropout = f.dropout_or("attention_dropout", 0.0);
  c.hidden_dropout = f.dropout_or("hidden_dropout", 0.0);
}

// llama, mistral, qwen2 (biases on q, k, v) and mixtral (a mixture of gated experts).
void read_llama_family(const Fields& f, ModelConfig& c) {
  const std::string& t = c.model_type;
  c.vocab = f.whole("vocab_size");
  c.hidden = f.whole("hidden_size");
  c.layers = f.whole("num_hidden_layers");
  c.heads = f.whole("num_attention_heads");
  c.kv_heads = f.whole_or("num_key_value_heads", c.heads);
  c.intermediate = f.whole("intermediate_size");
  c.tied_embeddings = f.flag_or("tie_word_embeddings", false);
  c.gated_mlp = true;
  c.qkv_bias = t == "qwen2" || f.flag_or("attention_bias", false);
  c.out_bias = t != "qwen2" && f.flag_or("attention_bias", false);
  c.mlp_bias = f.flag_or("mlp_bias", false);
  c.attention_dropout = f.dropout_or("attention_dropout", 0.0);
  if (t != "mixtral") return;
  c.experts = f.whole("num_local_experts");
  c.experts_per_token = f.whole("num_experts_per_tok");
  if (c.experts_per_token > c.experts) {
    f.fail("num_experts_per_tok", "must be at most num_local_experts (" +
                                      std::to_string(c.experts) + "), got " +
                                      std::to_string(c.experts_per_token));
  }
}

// The heads' grouping and width: key-value heads divide the heads, and without head_dim the
// heads divide the hidden size.
void read_heads(const json& j, const Fields& f, ModelConfig& c) {
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  if (c.heads % c.kv_heads != 0) {
    f.fail("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(c.heads) +
                                      "), got " + std::to_string(c.kv_heads));
  }
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
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

}  // namespace

ModelConfig parse_model_config(std::string_view json_text, const std::string& source) {
  if (const std::string why = json_depth_refusal(json_text); !why.empty()) {
    throw UsageError(source + ": " + why);
  }
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond a double
    throw UsageError(source + ": not JSON (" +
                     escape_controls(std::string(e.what()).substr(0, 200)) + ")");
  }
  if (!j.is_object()) throw UsageError(source + ": expected a JSON object (a config.json)");
  if (!j.contains("model_type") || !j["model_type"].is_string()) {
    throw UsageError(source + ": \"model_type\" is missing; supported: " + std::string(kFamilies));
  }
  const Fields f(j, source);
  ModelConfig c;
  c.model_type = j["model_type"].get<std::string>();
  const std::string& t = c.model_type;
  if (t == "gpt2") {
    read_gpt2(f, c);
  } else if (t == "gpt_neox") {
    read_gpt_neox(f, c);
  } else if (t == "llama" || t == "mistral" || t == "qwen2" || t == "mixtral") {
    read_llama_family(f, c);
  } else {
    // As it is written in the file, unless it holds control characters or runs long.
    const std::string named = printable(t, 64) == t ? "\"" + t + "\"" : shown(t);
    throw UsageError(source + ": model_type " + named +
                     " is not supported; supported: " + std::string(kFamilies));
  }
  read_heads(j, f, c);
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
  const Block b = block_of(c);
  const std::uint64_t h = c.hidden;
  const std::uint64_t attention = add(add(b.q, mul(2, b.kv)), b.o);
  // A dense MLP has one up linear (two with a gate) and the down linear; a mixture has that
  // per expert, and a router of hidden x experts.
  const std::uint64_t expert = add(mul(c.gated_mlp ? 2 : 1, b.mlp_in), b.mlp_out);
  const std::uint64_t router = c.experts > 0 ? mul(h, c.experts) : 0;
  const std::uint64_t mlp = c.experts > 0 ? add(mul(c.experts, expert), router) : expert;
  const std::uint64_t mlp_active =
      c.experts > 0 ? add(mul(c.experts_per_token, expert), router) : expert;

  ModelParams p;
  p.embedding_params = add(mul(c.vocab, h), mul(c.positions, h));
  p.per_layer_params = add(add(attention, mlp), b.norms);
  const std::uint64_t final_norm = c.norm_bias ? mul(2, h) : h;
  const std::uint64_t head = c.tied_embeddings ? 0 : mul(c.vocab, h);
  const std::uint64_t outside = add(add(p.embedding_params, final_norm), head);
  p.params = add(mul(c.layers, p.per_layer_params), outside);
  p.active_params = add(mul(c.layers, add(add(attention, mlp_active), b.norms)), outside);
  // The modules as the implementations build them: fused qkv in gpt2 and gpt_neox.
  const bool fused_qkv = c.model_type == "gpt2" || c.model_type == "gpt_neox";
  const std::array<std::uint64_t, 7> modules = {mul(c.vocab, h),
                                                mul(c.positions, h),
                                                fused_qkv ? add(b.q, mul(2, b.kv)) : b.q,
                                                b.o,
                                                b.mlp_in,
                                                b.mlp_out,
                                                router};
  p.largest_layer_params = *std::max_element(modules.begin(), modules.end());
  return p;
}

std::uint64_t small_tensor_params(const ModelConfig& c, std::uint64_t max_numel) {
  const std::uint64_t h = c.hidden, q = mul(c.heads, c.head_dim), k = mul(c.kv_heads, c.head_dim);
  const std::uint64_t i = c.intermediate;
  const bool fused_qkv = c.model_type == "gpt2" || c.model_type == "gpt_neox";
  std::uint64_t per_layer = 0, outside = 0;
  auto count = [max_numel](std::uint64_t& sum, std::uint64_t numel, std::uint64_t copies = 1) {
    if (numel <= max_numel) sum = add(sum, mul(numel, copies));
  };
  // Each block's tensors, weights and biases apart, as the implementations hold them.
  count(per_layer, h, c.norm_bias ? 4 : 2);
  if (fused_qkv) {
    count(per_layer, mul(h, add(q, mul(2, k))));
    if (c.qkv_bias) count(per_layer, add(q, mul(2, k)));
  } else {
    count(per_layer, mul(h, q));
    count(per_layer, mul(h, k), 2);
    if (c.qkv_bias) {
      count(per_layer, q);
      count(per_layer, k, 2);
    }
  }
  count(per_layer, mul(q, h));
  if (c.out_bias) count(per_layer, h);
  const std::uint64_t experts = c.experts > 0 ? c.experts : 1;
  count(per_layer, mul(h, i), mul(experts, c.gated_mlp ? 2 : 1));
  count(per_layer, mul(i, h), experts);
  if (c.mlp_bias) {
    count(per_layer, i, mul(experts, c.gated_mlp ? 2 : 1));
    count(per_layer, h, experts);
  }
  if (c.experts > 0) count(per_layer, mul(h, c.experts));
  count(outside, mul(c.vocab, h), c.tied_embeddings ? 1 : 2);
  if (c.positions > 0) count(outside, mul(c.positions, h));
  count(outside, h, c.norm_bias ? 2 : 1);
  return add(mul(c.layers, per_layer), outside);
}

std::string_view attention_name(Attention attention) {
  return attention == Attention::flash ? "flash" : "eager";
}

std::optional<ModelActivations> model_activation_bytes(const ModelConfig& c, std::uint64_t s,
                                                       std::uint64_t b,
                                                       plan::Checkpointing checkpointing,
                                                       Attention attention) {
  using u128 = unsigned __int128;
  // A rough size first (an overestimate), so that the exact sums below cannot wrap 128 bits.
  const long double rough =
      static_cast<long double>(s) * b *
      (64.0L * c.hidden + 8.0L * c.heads * s + 8.0L * c.intermediate * (c.experts_per_token + 1) +
       6.0L * c.experts + 8.0L * c.heads * c.head_dim + 16.0L * c.kv_heads * c.head_dim +
       10.0L * c.vocab) *
      (c.layers + 1.0L);
  if (!(rough < 1e36L)) return std::nullopt;  // far beyond 64 bits either way
  const u128 sb = u128(s) * b, h = c.hidden, a = c.heads, I = c.intermediate;
  const u128 q = u128(c.heads) * c.head_dim, k = u128(c.kv_heads) * c.head_dim;
  const u128 norms = 2 * 2 * sb * h;
  u128 attention_bytes = 2 * sb * h + 2 * sb * (q + 2 * k) + 2 * sb * q;
  u128 scores = 0;  // the s² terms
  if (attention == Attention::eager) {
    scores = 2 * a * s * sb + (c.attention_dropout ? 3 * a * s * sb : 0);
  } else {
    attention_bytes += 4 * a * sb;
  }
  const u128 expert = c.gated_mlp ? 2 * sb * h + 8 * sb * I : 2 * sb * h + 4 * sb * I;
  const u128 mlp = c.experts > 0 ? u128(c.experts_per_token) * expert + 6 * sb * c.experts : expert;
  const u128 masks = c.hidden_dropout ? 2 * sb * h : 0;
  const u128 per_layer_no_scores = norms + attention_bytes + mlp + masks;
  const u128 per_layer = per_layer_no_scores + scores;
  u128 layers = 0;
  switch (checkpointing) {
    case plan::Checkpointing::none:
      layers = per_layer * c.layers;
      break;
    case plan::Checkpointing::selective:
      layers = per_layer_no_scores * c.layers;
      break;
    case plan::Checkpointing::full:
      layers = 2 * sb * h * c.layers + per_layer;
      break;
  }
  const u128 outside = 2 * sb * h + 10 * sb * c.vocab;
  const u128 total = layers + outside;
  if (total > UINT64_MAX) return std::nullopt;
  return ModelActivations{std::uint64_t(per_layer), std::uint64_t(layers), std::uint64_t(outside),
                          std::uint64_t(total)};
}

namespace {

// The fields of each published config.json that set the size (the rest: dropout, rope, init).
constexpr CatalogueModel kCatalogue[] = {
    {"gpt2", "openai-community/gpt2", 124'439'808,
     R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
        "n_layer": 12, "n_head": 12})"},
    {"gpt2-medium", "openai-community/gpt2-medium", 354'823'168,
     R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 1024,
        "n_layer": 24, "n_head": 16})"},
    {"gpt2-large", "openai-community/gpt2-large", 774'030'080,
     R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 1280,
        "n_layer": 36, "n_head": 20})"},
    {"gpt2-xl", "openai-community/gpt2-xl", 1'557'611'200,
     R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 1600,
        "n_layer": 48, "n_head": 25})"},
    {"pythia-70m", "EleutherAI/pythia-70m", 70'426'624,
     R"({"model_type": "gpt_neox", "vocab_size": 50304, "hidden_size": 512,
        "num_hidden_layers": 6, "num_attention_heads": 8, "intermediate_size": 2048,
        "tie_word_embeddings": false, "use_parallel_residual": true})"},
    {"pythia-160m", "EleutherAI/pythia-160m", 162'322'944,
     R"({"model_type": "gpt_neox", "vocab_size": 50304, "hidden_size": 768,
        "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
        "tie_word_embeddings": false, "use_parallel_residual": true})"},
    {"pythia-410m", "EleutherAI/pythia-410m", 405'334'016,
     R"({"model_type": "gpt_neox", "vocab_size": 50304, "hidden_size": 1024,
        "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096,
        "tie_word_embeddings": false, "use_parallel_residual": true})"},
    {"pythia-1b", "EleutherAI/pythia-1b", 1'011'781'632,
     R"({"model_type": "gpt_neox", "vocab_size": 50304, "hidden_size": 2048,
        "num_hidden_layers": 16, "num_attention_heads": 8, "intermediate_size": 8192,
        "tie_word_embeddings": false, "use_parallel_residual": true})"},
    {"pythia-1.4b", "EleutherAI/pythia-1.4b", 1'414'647'808,
     R"({"model_type": "gpt_neox", "vocab_size": 50304, "hidden_size": 2048,
        "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 8192,
        "tie_word_embeddings": false, "use_parallel_residual": true})"},
    {"pythia-2.8b", "EleutherAI/pythia-2.8b", 2'775'208'960,
     R"({"model_type": "gpt_neox", "vocab_size": 50304, "hidden_size": 2560,
        "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 10240,
        "tie_word_embeddings": false, "use_parallel_residual": true})"},
    {"pythia-6.9b", "EleutherAI/pythia-6.9b", 6'857'302'016,
     R"({"model_type": "gpt_neox", "vocab_size": 50432, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 16384,
        "tie_word_embeddings": false, "use_parallel_residual": true})"},
    {"pythia-12b", "EleutherAI/pythia-12b", 11'846'072'320,
     R"({"model_type": "gpt_neox", "vocab_size": 50688, "hidden_size": 5120,
        "num_hidden_layers": 36, "num_attention_heads": 40, "intermediate_size": 20480,
        "tie_word_embeddings": false, "use_parallel_residual": true})"},
    {"tinyllama-1.1b", "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T", 1'100'048'384,
     R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 2048,
        "num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4,
        "intermediate_size": 5632, "tie_word_embeddings": false})"},
    {"llama-2-7b", "meta-llama/Llama-2-7b-hf", 6'738'415'616,
     R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
        "intermediate_size": 11008, "tie_word_embeddings": false})"},
    {"llama-2-13b", "meta-llama/Llama-2-13b-hf", 13'015'864'320,
     R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 5120,
        "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 40,
        "intermediate_size": 13824, "tie_word_embeddings": false})"},
    {"llama-2-70b", "meta-llama/Llama-2-70b-hf", 68'976'648'192,
     R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 8192,
        "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
        "intermediate_size": 28672, "tie_word_embeddings": false})"},
    {"llama-3-8b", "meta-llama/Meta-Llama-3-8B", 8'030'261'248,
     R"({"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "tie_word_embeddings": false})"},
    {"llama-3-70b", "meta-llama/Meta-Llama-3-70B", 70'553'706'496,
     R"({"model_type": "llama", "vocab_size": 128256, "hidden_size": 8192,
        "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
        "intermediate_size": 28672, "tie_word_embeddings": false})"},
    {"mistral-7b", "mistralai/Mistral-7B-v0.1", 7'241'732'096,
     R"({"model_type": "mistral", "vocab_size": 32000, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "tie_word_embeddings": false})"},
    {"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", 46'702'792'704,
     R"({"model_type": "mixtral", "vocab_size": 32000, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2,
        "tie_word_embeddings": false})"},
    {"qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B", 494'032'768,
     R"({"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896,
        "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
        "intermediate_size": 4864, "tie_word_embeddings": true})"},
    {"qwen2.5-7b", "Qwen/Qwen2.5-7B", 7'615'616'512,
     R"({"model_type": "qwen2", "vocab_size": 152064, "hidden_size": 3584,
        "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
        "intermediate_size": 18944, "tie_word_embeddings": false})"},
};

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::span<const CatalogueModel> model_catalogue() {
  return kCatalogue;
}

const CatalogueModel* find_model(std::string_view name) {
  for (const CatalogueModel& m : kCatalogue) {
    if (same_name(m.name, name) || same_name(m.hf_id, name)) return &m;
  }
  return nullptr;
}

std::string suggest_model(std::string_view name) {
  std::vector<std::string_view> names;
  for (const CatalogueModel& m : kCatalogue) names.push_back(m.name);
  return closest_name(name, names);
}

std::string catalogue_names() {
  std::string names;
  for (const CatalogueModel& m : kCatalogue) {
    names += (names.empty() ? "" : ", ") + std::string(m.name);
  }
  return names;
}

}  // namespace zerodp::catalog

#include "zerodp/catalog/lora.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "json_object.h"
#include "zerodp/common/error.h"
#include "zerodp/common/json_text.h"
#include "zerodp/common/saturating.h"

namespace zerodp::catalog {
namespace {

std::vector<std::string_view> dotted_parts(std::string_view s) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const std::size_t dot = s.find('.', at);
    parts.push_back(s.substr(at, dot == std::string_view::npos ? dot : dot - at));
    if (dot == std::string_view::npos) return parts;
    at = dot + 1;
  }
}

bool is_index(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// PEFT's match: the target is the name, or the name ends with "." + target. Targets naming
// one expert by its index are refused before they get here, so "*" matches nothing.
bool names(std::string_view target, std::string_view linear) {
  const std::vector<std::string_view> t = dotted_parts(target), l = dotted_parts(linear);
  if (t.size() > l.size()) return false;
  return std::equal(t.begin(), t.end(), l.end() - std::ptrdiff_t(t.size()));
}

}  // namespace

std::string linear_layer_names(const ModelConfig& config) {
  // A name once, though dense and mixture layers list it both (a substring test would drop
  // Qwen's router "mlp.gate" after "mlp.gate_proj").
  std::string out;
  std::vector<std::string_view> seen;
  for (const LinearLayer& l : linear_layers(config)) {
    if (std::find(seen.begin(), seen.end(), l.name) != seen.end()) continue;
    seen.push_back(l.name);
    out += (out.empty() ? "" : ", ") + std::string(l.name);
  }
  return out;
}

LoraCount lora_count(const ModelConfig& config, std::uint64_t rank,
                     std::span<const std::string> targets, std::string_view flag) {
  const std::string f(flag);
  if (rank == 0) throw UsageError(f + ": a LoRA rank must be 1 or more");
  if (targets.empty()) throw UsageError(f + ": expected the linears to adapt, or all-linear");
  const bool all_linear = std::find(targets.begin(), targets.end(), "all-linear") != targets.end();
  if (all_linear && targets.size() > 1) {
    throw UsageError(f + ": all-linear names every linear but the output layer; give it alone");
  }
  const std::vector<LinearLayer> linears = linear_layers(config);
  std::vector<bool> chosen(linears.size(), all_linear);
  if (all_linear) {
    for (std::size_t i = 0; i < linears.size(); ++i) chosen[i] = !linears[i].head;
  }
  for (const std::string& target : targets) {
    if (all_linear) break;
    if (target.empty()) throw UsageError(f + ": an empty name in the list");
    const std::vector<std::string_view> parts = dotted_parts(target);
    if (std::any_of(parts.begin(), parts.end(), is_index)) {
      throw UsageError(f + ": " + shown(target) +
                       " names one layer or expert by its index; give the name without it "
                       "(every layer's, every expert's)");
    }
    bool found = false;
    for (std::size_t i = 0; i < linears.size(); ++i) {
      if (names(target, linears[i].name)) chosen[i] = found = true;
    }
    if (!found) {
      throw UsageError(f + ": " + shown(target) + " names no linear of " + config.model_type +
                       "; its linears: " + linear_layer_names(config) + ", or all-linear");
    }
  }
  LoraCount count;
  for (std::size_t i = 0; i < linears.size(); ++i) {
    if (!chosen[i]) continue;
    const LinearLayer& l = linears[i];
    LoraTarget t{l.name, l.in, l.out, l.count,
                 saturating_mul(saturating_mul(rank, saturating_add(l.in, l.out)), l.count)};
    count.adapter_params = saturating_add(count.adapter_params, t.adapter_params);
    count.adapted_params =
        saturating_add(count.adapted_params, saturating_mul(saturating_mul(l.in, l.out), l.count));
    count.targets.push_back(t);
  }
  return count;
}

std::uint64_t saved_module_params(const ModelConfig& config, std::span<const std::string> modules,
                                  std::string_view flag) {
  struct Saved {
    std::string_view name;
    std::uint64_t params;
  };
  const std::uint64_t table = saturating_mul(config.vocab, config.hidden);
  std::vector<Saved> known;
  if (config.model_type == "gpt2") {
    known = {{"wte", table}, {"wpe", saturating_mul(config.positions, config.hidden)}};
  } else {
    known = {{config.model_type == "gpt_neox" ? "embed_in" : "embed_tokens", table}};
  }
  known.push_back({config.model_type == "gpt_neox" ? "embed_out" : "lm_head", table});
  std::uint64_t params = 0;
  std::vector<bool> taken(known.size(), false);
  for (const std::string& module : modules) {
    bool found = false;
    for (std::size_t i = 0; i < known.size(); ++i) {
      if (names(module, known[i].name) || names(known[i].name, module)) taken[i] = found = true;
    }
    if (!found) {
      std::string counted;
      for (const Saved& k : known) counted += (counted.empty() ? "" : ", ") + std::string(k.name);
      throw UsageError(std::string(flag) + ": " + shown(module) + " is not a module whose copy " +
                       "is counted; counted for " + config.model_type + ": " + counted);
    }
  }
  for (std::size_t i = 0; i < known.size(); ++i) {
    if (taken[i]) params = saturating_add(params, known[i].params);
  }
  return params;
}

LoraSettings parse_adapter_config(std::string_view json_text, const std::string& source) {
  using json = nlohmann::json;
  const json j = parse_json_object(json_text, source, "adapter_config.json");
  auto fail = [&](std::string_view field, const std::string& what) {
    throw UsageError(source + ": \"" + std::string(field) + "\" " + what);
  };
  auto value = [&](std::string_view field) -> const json* {
    const auto at = j.find(std::string(field));
    return at == j.end() || at->is_null() ? nullptr : &*at;
  };
  auto show = [](const json& v) {
    return cut_long(v.dump(-1, ' ', false, json::error_handler_t::replace));
  };
  auto names = [&](std::string_view field, const json& v) {
    std::vector<std::string> out;
    if (!v.is_array()) fail(field, "must be a list of module names, got " + show(v));
    for (const json& name : v) {
      if (!name.is_string() || name.get<std::string>().empty()) {
        fail(field, "must hold module names (non-empty strings), got " + show(name));
      }
      out.push_back(name.get<std::string>());
    }
    return out;
  };
  if (const json* type = value("peft_type"); type && *type != "LORA") {
    fail("peft_type", "must be \"LORA\" (a LoRA adapter), got " + show(*type));
  }
  LoraSettings lora;
  const json* r = value("r");
  if (!r || !r->is_number_unsigned() || r->get<std::uint64_t>() < 1) {
    fail("r", "must be the LoRA rank, a whole number >= 1, got " + (r ? show(*r) : "nothing"));
  }
  lora.rank = r->get<std::uint64_t>();
  if (const json* a = value("lora_alpha")) {
    if (!a->is_number() || !std::isfinite(a->get<double>())) {
      fail("lora_alpha", "must be a number, got " + show(*a));
    }
    lora.alpha = a->get<double>();
  }
  if (const json* d = value("lora_dropout")) {
    if (!d->is_number() || !(d->get<double>() >= 0) || !(d->get<double>() < 1)) {
      fail("lora_dropout", "must be a probability in [0, 1), got " + show(*d));
    }
    lora.dropout = d->get<double>();
  }
  const json* targets = value("target_modules");
  if (!targets) fail("target_modules", "is missing (a list of module names, or \"all-linear\")");
  if (targets->is_string()) {
    if (*targets != "all-linear") {
      fail("target_modules",
           "is a regular expression (" + show(*targets) +
               "), which zerodp does not match; give the list of module names, or \"all-linear\"");
    }
    lora.targets = {"all-linear"};
  } else {
    lora.targets = names("target_modules", *targets);
  }
  if (const json* save = value("modules_to_save"))
    lora.modules_to_save = names("modules_to_save", *save);
  if (const json* bias = value("bias"); bias && *bias != "none") {
    fail("bias", "trains biases (" + show(*bias) + "), which are not counted yet; \"none\" is");
  }
  if (const json* dora = value("use_dora"); dora && *dora != false) {
    fail("use_dora", "adds DoRA's magnitudes and their work, which are not counted yet");
  }
  // Newer PEFT's additions that train more or other tensors: a bias on lora_B, LoRA on
  // parameters (a mixture's fused experts), trained token rows, QA-LoRA's pooling.
  for (const char* field : {"lora_bias", "use_qalora"}) {
    if (const json* v = value(field); v && *v != false) {
      fail(field, "is set (" + show(*v) + "), which is not counted yet");
    }
  }
  for (const char* field : {"rank_pattern", "layers_to_transform", "exclude_modules",
                            "target_parameters", "trainable_token_indices", "layer_replication"}) {
    const json* v = value(field);
    if (v && (!(v->is_object() || v->is_array()) || !v->empty())) {
      fail(field, "is set (" + show(*v) + "), which is not counted yet");
    }
  }
  return lora;
}

TrainingFlops lora_training_flops(const ModelConfig& config, std::uint64_t seq_len,
                                  plan::Checkpointing checkpointing, const LoraShape& lora) {
  const TrainingFlops full = training_flops(config, seq_len, checkpointing);
  // The adapter parameters a token passes through: every layer's of a dense linear, the share
  // of a mixture's experts it is routed to.
  double adapters = 0;
  for (const LinearLayer& l : linear_layers(config)) {
    if (std::find(lora.adapted.begin(), lora.adapted.end(), l.name) == lora.adapted.end()) continue;
    double copies = double(l.count);
    if (l.name.find("experts.*") != std::string_view::npos && config.experts > 0) {
      copies *= double(config.experts_per_token) / double(config.experts);
    }
    adapters += double(lora.rank) * (double(l.in) + double(l.out)) * copies;
  }
  const double n = full.params, layers = double(config.layers), a = full.attention;
  TrainingFlops f;
  f.params = n;
  f.attention = a;
  f.forward = 2 * n + layers * a + 2 * adapters;
  f.model = f.forward + 2 * n + 2 * layers * a + 4 * adapters;
  switch (checkpointing) {
    case plan::Checkpointing::none:
      f.hardware = f.model;
      break;
    case plan::Checkpointing::selective:
      f.hardware = f.model + layers * a;
      break;
    case plan::Checkpointing::full:
      f.hardware = f.model + f.forward;
      break;
  }
  return f;
}

std::uint64_t nf4_code_bytes(std::uint64_t n, const Nf4Options& o) {
  ZERODP_CHECK(o.storage_bytes == 1 || o.storage_bytes == 2 || o.storage_bytes == 4);
  const std::uint64_t s = o.storage_bytes;
  // quantize_4bit's allocation: (n + 1) // (2·s) elements of the storage type, without
  // forming n + 1.
  return saturating_mul(s, n / (2 * s) + (n % (2 * s) + 1 == 2 * s ? 1 : 0));
}

std::uint64_t nf4_tensor_bytes(std::uint64_t n, const Nf4Options& o) {
  ZERODP_CHECK(o.block > 0);
  const std::uint64_t codes = nf4_code_bytes(n, o);
  const std::uint64_t blocks = n / o.block + (n % o.block != 0 ? 1 : 0);
  constexpr std::uint64_t kNf4Table = 16 * 4, kDynamicMap = 256 * 4, kOffset = 4;
  std::uint64_t absmax = saturating_mul(4, blocks);
  if (o.double_quant) {
    absmax = saturating_add(
        saturating_add(blocks, saturating_mul(4, blocks / 256 + (blocks % 256 != 0 ? 1 : 0))),
        kDynamicMap + kOffset);
  }
  return saturating_add(saturating_add(codes, absmax), kNf4Table);
}

QuantizedBase nf4_base(const ModelConfig& config, const Nf4Options& options) {
  QuantizedBase base;
  for (const LinearLayer& l : linear_layers(config)) {
    if (l.head) continue;
    const std::uint64_t elements = saturating_mul(l.in, l.out);
    base.quantized_params =
        saturating_add(base.quantized_params, saturating_mul(elements, l.count));
    base.quantized_tensors = saturating_add(base.quantized_tensors, l.count);
    base.quantized_bytes = saturating_add(
        base.quantized_bytes, saturating_mul(nf4_tensor_bytes(elements, options), l.count));
    base.code_bytes =
        saturating_add(base.code_bytes, saturating_mul(nf4_code_bytes(elements, options), l.count));
    base.largest_quantized = std::max(base.largest_quantized, elements);
  }
  const std::uint64_t all = model_params(config).params;
  base.kept_params = all >= base.quantized_params ? all - base.quantized_params : 0;
  return base;
}

}  // namespace zerodp::catalog

// `zerodp plan`'s LoRA and QLoRA runs: --lora-rank with --lora-targets, --lora-alpha,
// --lora-dropout and --modules-to-save, or a PEFT --adapter-config; --quantize nf4 for QLoRA's
// base. The counts are the catalogue's (catalog/lora.h); this file turns the flags into the
// plan's trained Φ and frozen base (report.h's LoraInput, plan/frozen.h).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "output.h"
#include "plan_flags.h"
#include "zerodp/catalog/lora.h"
#include "zerodp/common/error.h"
#include "zerodp/common/saturating.h"
#include "zerodp/common/units.h"
#include "zerodp/deepspeed/runtime.h"

namespace zerodp::cli {
namespace {

// PEFT's target_modules when none is given (peft/utils/constants.py,
// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), for the families both count.
std::vector<std::string> peft_default_targets(const std::string& model_type) {
  if (model_type == "gpt2") return {"c_attn"};
  if (model_type == "gpt_neox") return {"query_key_value"};
  for (const char* family : {"llama", "mistral", "mixtral", "gemma2", "qwen2"}) {
    if (model_type == family) return {"q_proj", "v_proj"};
  }
  return {};
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string::size_type start = 0;
  while (true) {
    const std::string::size_type comma = text.find(',', start);
    out.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// The flags' run, or the adapter config's.
catalog::LoraSettings read_settings(const PlanFlags& f, const catalog::ModelConfig& config,
                                    report::PlanInputs& in) {
  const std::pair<const char*, const std::string*> given[] = {
      {"--lora-rank", &f.lora_rank},
      {"--lora-targets", &f.lora_targets},
      {"--lora-alpha", &f.lora_alpha},
      {"--lora-dropout", &f.lora_dropout},
      {"--modules-to-save", &f.modules_to_save}};
  if (!f.adapter_config.empty()) {
    for (const auto& [flag, text] : given) {
      if (!text->empty()) {
        throw UsageError(std::string(flag) + ": not with --adapter-config, which gives it");
      }
    }
    const std::string source = "--adapter-config " + printable(f.adapter_config);
    return catalog::parse_adapter_config(
        read_file(f.adapter_config, "--adapter-config", "PEFT's adapter_config.json"), source);
  }
  if (f.lora_rank.empty()) {
    for (const auto& [flag, text] : given) {
      if (!text->empty()) throw UsageError(std::string(flag) + ": needs --lora-rank");
    }
  }
  catalog::LoraSettings s;
  s.rank = units::parse_whole_in(f.lora_rank, "--lora-rank", 1, 1u << 20);
  s.alpha = f.lora_alpha.empty()
                ? 8.0  // LoraConfig's default
                : units::parse_real(f.lora_alpha, "--lora-alpha",
                                    "expected a positive number such as 16", units::Zero::rejected);
  if (!f.lora_dropout.empty()) {
    s.dropout = units::parse_fraction(f.lora_dropout, "--lora-dropout");
    if (s.dropout >= 1) {
      throw UsageError("--lora-dropout: expected a probability below 1 such as 0.05, got " +
                       shown(f.lora_dropout));
    }
  }
  if (!f.lora_targets.empty()) {
    s.targets = split_list(f.lora_targets);
  } else {
    s.targets = peft_default_targets(config.model_type);
    if (s.targets.empty()) {
      throw UsageError("--lora-targets: required for " + printable(config.model_type) +
                       ", for which PEFT has no default; the model's linears: " +
                       catalog::linear_layer_names(config) + ", or all-linear");
    }
    in.assumptions.push_back(
        {field_ref("lora_targets"), joined(s.targets), "PEFT's default for " + config.model_type});
  }
  if (!f.modules_to_save.empty()) s.modules_to_save = split_list(f.modules_to_save);
  return s;
}

// A LoRA run of the model counted: what trains, the frozen base, the saved tensors' shape.
struct LoraRun {
  report::LoraInput input;
  std::uint64_t trained = 0, largest_trained = 0, dequantized = 0;
  std::vector<plan::FrozenPart> frozen;
  plan::FrozenUnits frozen_units;  // what FSDP gathers of the base, unit by unit
  bool fsdp_units_known = true;    // false: an NF4 base on layers of two kinds
  catalog::LoraShape shape;
};

LoraRun count_lora(const catalog::ModelConfig& config, const report::ModelInput& model,
                   const catalog::LoraSettings& s, std::optional<catalog::Nf4Options> nf4,
                   std::uint32_t param_bytes, const char* targets_flag, const char* saved_flag) {
  const catalog::LoraCount count = catalog::lora_count(config, s.rank, s.targets, targets_flag);
  const std::uint64_t saved = catalog::saved_module_params(config, s.modules_to_save, saved_flag);
  LoraRun run;
  report::LoraInput& l = run.input;
  l.rank = s.rank;
  l.alpha = s.alpha;
  l.dropout = s.dropout;
  l.targets = s.targets;
  l.modules_to_save = s.modules_to_save;
  l.adapter_params = count.adapter_params;
  l.saved_params = saved;
  l.adapted_params = count.adapted_params;
  l.frozen_params = model.params.params;
  l.nf4 = nf4.has_value();
  l.double_quant = nf4 && nf4->double_quant;
  // What trains: the adapters, and the trainable copies of the modules saved whole (PEFT keeps
  // each original, frozen, beside its copy: the base stays whole).
  run.trained = count.adapter_params + saved;
  if (run.trained < count.adapter_params) {
    throw UsageError(std::string(targets_flag) + ": expected adapters whose count fits 64 bits");
  }
  // The largest trained tensor: an adapter's lora_A (rank x in) or lora_B (out x rank), or a
  // saved module's copy.
  for (const catalog::LoraTarget& t : count.targets) {
    const std::uint64_t side = std::max(t.in, t.out);
    const std::uint64_t tensor = side > UINT64_MAX / s.rank ? UINT64_MAX : s.rank * side;
    run.largest_trained = std::max(run.largest_trained, tensor);
  }
  for (const std::string& module : s.modules_to_save) {
    run.largest_trained = std::max(
        run.largest_trained, catalog::saved_module_params(config, std::vector{module}, saved_flag));
  }
  if (nf4) {
    const catalog::QuantizedBase q = catalog::nf4_base(config, *nf4);
    l.quantized_params = q.quantized_params;
    run.frozen = {{"NF4 codes", q.code_bytes, 1, true},
                  {"NF4 quantization state", q.quantized_bytes - q.code_bytes, 1, false},
                  {"16-bit weights", q.kept_params, param_bytes, true}};
    run.dequantized = q.largest_quantized;
    // FSDP's units: the root's 16 bits, and a layer's codes and 16-bit remainder (every
    // quantized weight is in a layer; counted where the layers are alike).
    run.fsdp_units_known = !(config.experts > 0 && config.dense_layers > 0);
    const std::uint64_t layers = std::max<std::uint64_t>(config.layers, 1);
    const std::uint64_t layer_quantized = q.quantized_params / layers;
    run.frozen_units = {
        saturating_mul(model.params.outside_params, param_bytes),
        q.code_bytes / layers +
            saturating_mul(model.params.per_layer_params - layer_quantized, param_bytes)};
  } else {
    // The base in the run's 16 bits (4 in fp32).
    run.frozen = {{"16-bit weights", model.params.params, param_bytes, true}};
    run.frozen_units = {saturating_mul(model.params.outside_params, param_bytes),
                        saturating_mul(model.params.per_layer_params, param_bytes)};
  }
  run.shape = {s.rank, s.dropout, {}, false, nf4.has_value()};
  for (const catalog::LoraTarget& t : count.targets) run.shape.adapted.push_back(t.name);
  return run;
}

// The NF4 base asked, or none.
std::optional<catalog::Nf4Options> nf4_options(const LoraAsked& asked) {
  if (!asked.nf4) return std::nullopt;
  catalog::Nf4Options o;
  o.double_quant = asked.double_quant;
  return o;
}

// What the plan asks of a LoRA run is refused beside these (report.cc's validate_frozen): no
// LoRA run is offered in their place either.
bool lora_plannable(const report::PlanInputs& in) {
  return in.offload.params == deepspeed::OffloadDevice::none && !in.zeropp.any() && !in.topology &&
         !in.compute_seconds && !in.comm_bytes;
}

}  // namespace

std::optional<LoraAsked> read_lora(const PlanFlags& f, const catalog::ModelConfig& config,
                                   report::PlanInputs& in) {
  const bool lora = !f.lora_rank.empty() || !f.adapter_config.empty();
  const bool any = lora || !f.lora_targets.empty() || !f.lora_alpha.empty() ||
                   !f.lora_dropout.empty() || !f.modules_to_save.empty();
  if (!f.double_quant.empty() && f.quantize.empty()) {
    throw UsageError("--double-quant: needs --quantize nf4 (it is how NF4 keeps its absmax)");
  }
  if (!f.double_quant.empty() && f.double_quant != "on" && f.double_quant != "off") {
    throw UsageError("--double-quant: expected on or off, got " + shown(f.double_quant));
  }
  if (!f.quantize.empty()) {
    if (f.quantize != "nf4") {
      throw UsageError("--quantize: expected nf4 (QLoRA's 4-bit NormalFloat), got " +
                       shown(f.quantize));
    }
    if (!lora) {
      throw UsageError(
          "--quantize: a quantized base trains adapters only: needs --lora-rank or "
          "--adapter-config");
    }
  }
  in.fine_tune_asked = "full";
  if (!any) return std::nullopt;
  if (!in.model) {
    const char* flag = !f.adapter_config.empty() ? "--adapter-config" : "--lora-rank";
    throw UsageError(std::string(flag) +
                     ": needs --model or --model-config (the adapters are counted on its "
                     "linears)");
  }
  LoraAsked asked{read_settings(f, config, in), f.quantize == "nf4", f.double_quant != "off", {}};
  const bool from_file = !f.adapter_config.empty();
  LoraRun run = count_lora(config, *in.model, asked.settings, nf4_options(asked), in.bpp.params,
                           from_file ? "--adapter-config" : "--lora-targets",
                           from_file ? "--adapter-config" : "--modules-to-save");
  run.input.source = from_file ? "--adapter-config " + printable(f.adapter_config)
                               : "--lora-rank " + std::to_string(asked.settings.rank) +
                                     " --lora-targets " + joined(asked.settings.targets);
  in.params = run.trained;
  in.largest_trained = run.largest_trained;
  in.frozen = std::move(run.frozen);
  if (in.framework == deepspeed::Framework::fsdp && !run.fsdp_units_known) {
    throw UsageError("--framework fsdp: a QLoRA base on dense and mixture layers (" +
                     config.model_type +
                     ") is not counted yet for FSDP's units; plan it with deepspeed");
  }
  in.dequantized_params = run.dequantized;
  in.frozen_units = run.frozen_units;
  in.lora = std::move(run.input);
  in.fine_tune_asked = asked.nf4 ? "qlora" : "lora";
  asked.shape = std::move(run.shape);
  return asked;
}

void add_fine_tune_choices(const catalog::ModelConfig& config, const ActivationShape& a,
                           const std::optional<LoraAsked>& asked, report::PlanInputs& in) {
  if (!in.model || !in.gpus || !in.gpu_memory || !lora_plannable(in)) return;
  const auto lora_choice = [&](std::string method, std::string change,
                               const catalog::LoraSettings& s, bool nf4) {
    // QLoRA as asked (--double-quant), else with double quantization.
    std::optional<catalog::Nf4Options> options;
    if (nf4) {
      options.emplace();
      options->double_quant = !asked || asked->double_quant;
    }
    LoraRun run = count_lora(config, *in.model, s, options, in.bpp.params, "--lora-targets",
                             "--modules-to-save");
    const auto act = catalog::lora_activation_bytes(
        config, a.seq_len, a.micro_batch, a.checkpointing, a.attention, run.shape, "--lora-rank");
    if (!act || (in.framework == deepspeed::Framework::fsdp && !run.fsdp_units_known)) return;
    run.input.source = change;
    in.fine_tune_choices.push_back({std::move(method), std::move(change), run.trained,
                                    std::move(run.frozen), run.largest_trained, run.dequantized,
                                    std::move(run.input), act->total, run.frozen_units});
  };
  try {
    if (!asked) {
      // The usual LoRA of a full fine-tune's model: rank 16 on every linear but the head.
      catalog::LoraSettings s;
      s.rank = 16;
      s.alpha = 16;
      s.targets = {"all-linear"};
      const std::string change =
          field_ref("lora_rank") + " 16 " + field_ref("lora_targets") + " all-linear";
      lora_choice("lora", change, s, false);
      lora_choice("qlora", change + " " + field_ref("quantize") + " nf4", s, true);
      return;
    }
    const auto full = catalog::model_activation_bytes(config, a.seq_len, a.micro_batch,
                                                      a.checkpointing, a.attention);
    if (full) {
      in.fine_tune_choices.push_back({"full",
                                      "without the LoRA flags",
                                      in.model->params.params,
                                      {},
                                      std::nullopt,
                                      0,
                                      std::nullopt,
                                      full->total});
    }
    if (asked->nf4) {
      lora_choice("lora", "without " + field_ref("quantize"), asked->settings, false);
    } else {
      lora_choice("qlora", field_ref("quantize") + " nf4", asked->settings, true);
    }
  } catch (const UsageError&) {
    // A family whose LoRA activations are not counted (DeepSeek): no LoRA run offered.
  }
}

}  // namespace zerodp::cli

// `zerodp plan`'s model and activations: --model and --model-config (a published model or a
// Hugging Face config.json), --list-models, and the activations given in bytes, from a
// transformer shape, or from the model with --seq-len and --micro-batch (plan_flags.h).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "output.h"
#include "plan_flags.h"
#include "zerodp/common/error.h"
#include "zerodp/common/json_utf8.h"
#include "zerodp/common/units.h"
#include "zerodp/plan/activations.h"

namespace zerodp::cli {
namespace {

constexpr const char* kShapeFlags = "--layers, --hidden, --heads, --seq-len, --micro-batch";

using ShapeFlag = std::pair<const char*, const std::string*>;

// All five shape flags, each a whole number, with the heads dividing the hidden size.
plan::TransformerShape read_shape(const ShapeFlag (&shape_flags)[4], const MicroBatch& micro_batch,
                                  const std::string& heads) {
  std::uint64_t value[4];
  for (int i = 0; i < 4; ++i) {
    const auto& [flag, text] = shape_flags[i];
    if (text->empty()) {
      throw UsageError(std::string(flag) + ": required with the other transformer shape flags (" +
                       kShapeFlags + "), a whole number");
    }
    value[i] = i == 3 ? units::parse_tokens(*text, flag) : units::parse_whole(*text, flag);
  }
  if (!micro_batch.value) {
    throw UsageError(
        std::string("--micro-batch: required with the other transformer shape flags (") +
        kShapeFlags + "), a whole number");
  }
  const plan::TransformerShape shape{value[0], value[1], value[2], value[3], *micro_batch.value};
  if (shape.hidden % shape.heads != 0) {
    throw UsageError("--heads: expected a divisor of --hidden (" + std::to_string(shape.hidden) +
                     "), got " + shown(heads));
  }
  return shape;
}

plan::Checkpointing parse_checkpointing(const std::string& text) {
  if (text == "full") return plan::Checkpointing::full;
  if (text == "selective") return plan::Checkpointing::selective;
  if (!text.empty() && text != "none") {
    throw UsageError("--checkpointing: expected none, selective or full, got " + shown(text));
  }
  return plan::Checkpointing::none;
}

// --activations, when given, in bytes.
void read_given_activations(const PlanFlags& f, report::PlanInputs& in) {
  if (f.activations.empty()) return;
  in.activation_bytes = units::parse_bytes(f.activations, "--activations", units::Zero::allowed);
  in.activations_given = true;
  in.activations_source = "given";
}

// transformers' default attn_implementation is sdpa (PyTorch's scaled_dot_product_attention);
// flash is flash_attention_2, eager the s^2 scores kept.
catalog::Attention parse_attention(const std::string& text) {
  if (text.empty() || text == "sdpa") return catalog::Attention::sdpa;
  if (text == "flash" || text == "flash_attention_2") return catalog::Attention::flash;
  if (text == "eager") return catalog::Attention::eager;
  throw UsageError("--attention: expected sdpa (the default), flash or eager, got " + shown(text));
}

// A run's activations at a micro-batch, checkpointing and attention: a full fine-tune's or a
// LoRA run's (catalog/models.h, catalog/lora.h).
using ActivationsOf = std::function<std::optional<catalog::ModelActivations>(
    std::uint64_t batch, plan::Checkpointing, catalog::Attention)>;

// What the same run could change to hold fewer activations, each computed for this model:
// full checkpointing, flash attention, both, and each smaller micro-batch (halving), alone and
// with both. The report plans each again when the stage wanted does not fit (report.h).
void add_activation_choices(const ActivationsOf& activations, std::uint64_t b,
                            plan::Checkpointing checkpointing, catalog::Attention attention,
                            std::uint64_t now, report::PlanInputs& in) {
  auto choice = [&](std::string change, std::uint64_t batch, plan::Checkpointing c,
                    catalog::Attention a) {
    const auto alt = activations(batch, c, a);
    if (alt && alt->total < now) in.activation_choices.push_back({std::move(change), alt->total});
  };
  const std::string full = field_ref("checkpointing") + " full";
  const std::string flash = field_ref("attention") + " flash";
  const bool can_checkpoint = checkpointing != plan::Checkpointing::full;
  const bool can_flash = attention != catalog::Attention::flash;
  if (can_checkpoint) choice(full, b, plan::Checkpointing::full, attention);
  if (can_flash) choice(flash, b, checkpointing, catalog::Attention::flash);
  if (can_checkpoint && can_flash) {
    choice(full + " " + flash, b, plan::Checkpointing::full, catalog::Attention::flash);
  }
  for (std::uint64_t smaller = b / 2; smaller >= 1; smaller /= 2) {
    const std::string batch = field_ref("micro_batch") + " " + std::to_string(smaller);
    choice(batch, smaller, checkpointing, attention);
    if (can_checkpoint || can_flash) {
      const std::string least = can_checkpoint && can_flash ? full + " " + flash
                                : can_checkpoint            ? full
                                                            : flash;
      choice(least + " " + batch, smaller, plan::Checkpointing::full, catalog::Attention::flash);
    }
  }
}

}  // namespace

// Activations of a published model, from its config and --seq-len, --micro-batch.
std::optional<ActivationShape> read_model_activations(const PlanFlags& f,
                                                      const MicroBatch& micro_batch,
                                                      const catalog::ModelConfig& config,
                                                      const catalog::LoraShape* lora,
                                                      report::PlanInputs& in) {
  if (!f.activations.empty()) {
    for (const auto& [flag, text] : {std::pair{"--seq-len", &f.seq_len},
                                     {"--micro-batch", &f.micro_batch},
                                     {"--checkpointing", &f.checkpointing},
                                     {"--attention", &f.attention}}) {
      if (!text->empty()) {
        throw UsageError(std::string("--activations: not with ") + flag +
                         ", from which they are computed");
      }
    }
    read_given_activations(f, in);
    return std::nullopt;
  }
  // What a run does unless told otherwise, each said in the plan's "assumed" line: run_clm's
  // block_size and TRL's max_length (1024 tokens), the Trainer's per_device_train_batch_size (8),
  // no checkpointing (the Trainer's gradient_checkpointing=False), transformers' sdpa.
  const std::string seq_text = f.seq_len.empty() ? std::string("1024") : f.seq_len;
  if (f.seq_len.empty()) {
    in.assumptions.push_back({field_ref("seq_len"), seq_text, "run_clm's and TRL's default"});
  }
  const std::string batch_text = micro_batch.value ? micro_batch.text : std::string("8");
  if (!micro_batch.value) {
    in.assumptions.push_back(
        {field_ref("micro_batch"), batch_text, "the Trainer's per_device_train_batch_size"});
  }
  if (f.checkpointing.empty()) {
    in.assumptions.push_back({field_ref("checkpointing"), "none", "the Trainer's default"});
  }
  if (f.attention.empty()) {
    in.assumptions.push_back({field_ref("attention"), "sdpa", "transformers' default"});
  }
  const std::uint64_t s = units::parse_tokens(seq_text, "--seq-len");
  const std::uint64_t b = micro_batch.value.value_or(8);
  const plan::Checkpointing checkpointing = parse_checkpointing(f.checkpointing);
  const catalog::Attention attention = parse_attention(f.attention);
  const ActivationsOf activations = [&](std::uint64_t batch, plan::Checkpointing c,
                                        catalog::Attention a) {
    return lora ? catalog::lora_activation_bytes(config, s, batch, c, a, *lora, "--lora-rank")
                : catalog::model_activation_bytes(config, s, batch, c, a);
  };
  const auto bytes = activations(b, checkpointing, attention);
  if (!bytes) {
    throw UsageError(
        "--seq-len, --micro-batch: expected a size whose activation bytes fit in "
        "64 bits");
  }
  in.activation_bytes = bytes->total;
  in.activations_given = true;
  in.activations_from = field_ref("seq_len") + ", " + field_ref("micro_batch");
  add_activation_choices(activations, b, checkpointing, attention, bytes->total, in);
  in.activations_source = in.model->name + (lora ? " with LoRA" : "") + ": s=" + std::to_string(s) +
                          " b=" + batch_text + ", checkpointing " +
                          std::string(plan::checkpointing_name(checkpointing)) + ", " +
                          std::string(catalog::attention_name(attention)) + " attention; layers " +
                          units::format_bytes(bytes->layers) + ", logits and loss " +
                          units::format_bytes(bytes->logits_and_loss);
  const ActivationShape shape{s, b, checkpointing, attention};
  // QLoRA's step spends time in bitsandbytes' dequantization of each weight, each pass, and
  // modules_to_save train whole modules beside the adapters: neither is counted yet
  // (plan_step.cc says so where a step is asked for).
  if (lora && (lora->quantized_base || (in.lora && !in.lora->modules_to_save.empty()))) {
    return shape;
  }
  // The step's FLOPs a GPU: its b·s tokens' (a 64-bit count: the activations' bytes, which
  // hold b·s·h, fit in 64 bits). A LoRA run's backward computes no weight gradient of the base.
  const catalog::TrainingFlops flops =
      lora ? catalog::lora_training_flops(config, s, checkpointing, *lora)
           : catalog::training_flops(config, s, checkpointing);
  const double tokens = double(s) * double(b);
  const double forward = flops.forward;
  in.step_compute = report::PlanInputs::StepCompute{forward * tokens,
                                                    (flops.hardware - forward) * tokens,
                                                    flops.model * tokens,
                                                    s * b,
                                                    std::max<std::uint64_t>(config.layers, 1),
                                                    checkpointing};
  return shape;
}

// Activations: given in bytes, or from a transformer shape (all five flags), or none.
void read_activations(const PlanFlags& f, const MicroBatch& micro_batch, report::PlanInputs& in) {
  if (!f.attention.empty()) {
    throw UsageError("--attention: applies to --model or --model-config");
  }
  const ShapeFlag shape_flags[4] = {{"--layers", &f.layers},
                                    {"--hidden", &f.hidden},
                                    {"--heads", &f.heads},
                                    {"--seq-len", &f.seq_len}};
  bool any_shape = micro_batch.value.has_value();
  for (const auto& [flag, text] : shape_flags) any_shape |= !text->empty();
  if (!any_shape) {
    if (!f.checkpointing.empty()) {
      throw UsageError(std::string("--checkpointing: needs the transformer shape (") + kShapeFlags +
                       ")");
    }
    read_given_activations(f, in);
    return;
  }
  if (!f.activations.empty()) {
    throw UsageError(std::string("--activations: not with the transformer shape (") + kShapeFlags +
                     "), from which they are computed");
  }
  const plan::TransformerShape shape = read_shape(shape_flags, micro_batch, f.heads);
  const plan::Checkpointing checkpointing = parse_checkpointing(f.checkpointing);
  const auto bytes = plan::activation_bytes(shape, checkpointing);
  if (!bytes) {
    throw UsageError(std::string(kShapeFlags) +
                     ": expected a shape whose activation bytes fit in 64 bits");
  }
  in.activation_bytes = *bytes;
  in.activations_given = true;
  in.activations_from = field_ref("layers") + ", " + field_ref("hidden") + ", " +
                        field_ref("heads") + ", " + field_ref("seq_len") + ", " +
                        field_ref("micro_batch");
  in.activations_source = "Korthikanti et al. 2022: L=" + f.layers + " h=" + f.hidden +
                          " a=" + f.heads + " s=" + std::to_string(shape.seq_len) +
                          " b=" + micro_batch.text + ", checkpointing " +
                          std::string(plan::checkpointing_name(checkpointing));
}

// (--model-config). Either replaces --params.
std::optional<report::ModelInput> read_model(const PlanFlags& f, catalog::ModelConfig& config) {
  if (f.model.empty() && f.model_config.empty()) return std::nullopt;
  if (!f.model.empty() && !f.model_config.empty()) {
    throw UsageError("--model: not with --model-config; give one");
  }
  const char* flag = f.model.empty() ? "--model-config" : "--model";
  if (!f.params.empty()) {
    throw UsageError(std::string("--params: not with ") + flag + ", which gives the count");
  }
  for (const auto& [shape_flag, text] :
       {std::pair{"--layers", &f.layers}, {"--hidden", &f.hidden}, {"--heads", &f.heads}}) {
    if (!text->empty()) {
      throw UsageError(std::string(shape_flag) + ": not with " + flag +
                       ", whose config gives the shape (its activations come from --seq-len "
                       "and --micro-batch)");
    }
  }
  report::ModelInput m;
  std::string text;
  if (!f.model.empty()) {
    const catalog::CatalogueModel* known = catalog::find_model(f.model);
    if (!known) {
      const std::string near = catalog::suggest_model(f.model);
      throw UsageError("--model: unknown model " + shown(f.model) +
                       (near.empty() ? "" : "; did you mean '" + near + "'?") + "; known: " +
                       catalog::catalogue_names() + " (or --model-config config.json)");
    }
    m.name = std::string(known->name);
    m.source = std::string(known->hf_id);
    text = std::string(known->config_json);
  } else {
    text = read_file(f.model_config, "--model-config", "a Hugging Face config.json");
    // The name the plan's lines and its JSON show (and the config's errors name): a path
    // holding a control character is quoted and escaped, so that it can neither split a line
    // nor drive the terminal.
    m.name = printable(f.model_config);
    m.source = "--model-config";
  }
  config = catalog::parse_model_config(text, std::string(flag) + " " + m.name);
  m.model_type = config.model_type;
  m.params = catalog::model_params(config);
  return m;
}

// --list-models: the catalogue, as a table or (with --json) an array of {name, model_type,
// params, active_params, hf_id, published_params}.
void list_models(bool json) {
  nlohmann::json all = nlohmann::json::array();
  // Columns as wide as their widest entry: the table fits 100 columns (report/table.h).
  struct Row {
    std::string name, type, params, active, hf_id;
  };
  std::vector<Row> rows{{"--model", "type", "params", "active", "config published as"}};
  for (const catalog::CatalogueModel& m : catalog::model_catalogue()) {
    const catalog::ModelConfig c = catalog::parse_model_config(m.config_json, std::string(m.name));
    const catalog::ModelParams p = catalog::model_params(c);
    if (json) {
      all.push_back({{"name", m.name},
                     {"model_type", c.model_type},
                     {"params", p.params},
                     {"active_params", p.active_params},
                     {"hf_id", m.hf_id},
                     {"published_params", m.published_params}});
      continue;
    }
    rows.push_back({std::string(m.name), c.model_type, units::format_count(p.params),
                    units::format_count(p.active_params), std::string(m.hf_id)});
  }
  if (json) {
    std::fprintf(out(), "%s\n", utf8_dump(all, 2).c_str());
    return;
  }
  int name_w = 0, type_w = 0, params_w = 0, active_w = 0;
  for (const Row& r : rows) {
    name_w = std::max(name_w, int(r.name.size()));
    type_w = std::max(type_w, int(r.type.size()));
    params_w = std::max(params_w, int(r.params.size()));
    active_w = std::max(active_w, int(r.active.size()));
  }
  for (const Row& r : rows) {
    std::fprintf(out(), "%-*s  %-*s  %*s  %*s  %s\n", name_w, r.name.c_str(), type_w,
                 r.type.c_str(), params_w, r.params.c_str(), active_w, r.active.c_str(),
                 r.hf_id.c_str());
  }
}

}  // namespace zerodp::cli

// `zerodp plan`: every cell of the seed's scenario matrix that the given flags determine, as
// one table (or JSON with --json). The arithmetic is the planner library's; this file only
// turns flags into PlanInputs, naming the flag in every error.
#include <climits>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app.h"
#include "command.h"
#include "plan_flags.h"
#include "plan_link.h"
#include "plan_options.h"
#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/units.h"
#include "zerodp/deepspeed/config.h"
#include "zerodp/plan/activations.h"
#include "zerodp/report/deepspeed.h"
#include "zerodp/report/json.h"
#include "zerodp/report/report.h"
#include "zerodp/report/table.h"

namespace zerodp::cli {

std::string read_file(const std::string& path, const char* flag, const char* expected) {
  std::string why;
  std::optional<std::string> text = read_bounded(path, kMaxConfigBytes, why);
  if (!text) {
    throw UsageError(std::string(flag) + ": cannot read " + quote(path) + " (" + why +
                     "; expected " + expected + ")");
  }
  return std::move(*text);
}

namespace {

constexpr const char* kShapeFlags = "--layers, --hidden, --heads, --seq-len, --micro-batch";

using ShapeFlag = std::pair<const char*, const std::string*>;

// The micro-batch as the flags and the config resolve it, and its text for the plan's header.
struct MicroBatch {
  std::optional<std::uint64_t> value;
  std::string text;  // as typed, or the config's value
};

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
    value[i] = units::parse_whole(*text, flag);
  }
  if (!micro_batch.value) {
    throw UsageError(
        std::string("--micro-batch: required with the other transformer shape flags (") +
        kShapeFlags + "), a whole number");
  }
  const plan::TransformerShape shape{value[0], value[1], value[2], value[3], *micro_batch.value};
  if (shape.hidden % shape.heads != 0) {
    throw UsageError("--heads: expected a divisor of --hidden (" + std::to_string(shape.hidden) +
                     "), got " + quote(heads));
  }
  return shape;
}

plan::Checkpointing parse_checkpointing(const std::string& text) {
  if (text == "full") return plan::Checkpointing::full;
  if (text == "selective") return plan::Checkpointing::selective;
  if (!text.empty() && text != "none") {
    throw UsageError("--checkpointing: expected none, selective or full, got " + quote(text));
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

catalog::Attention parse_attention(const std::string& text) {
  if (text == "flash") return catalog::Attention::flash;
  if (!text.empty() && text != "eager") {
    throw UsageError("--attention: expected eager or flash, got " + quote(text));
  }
  return catalog::Attention::eager;
}

// What the same run could change to hold fewer activations, each computed for this model:
// full checkpointing, flash attention, both, and each smaller micro-batch (halving), alone and
// with both. The report plans each again when the stage wanted does not fit (report.h).
void add_activation_choices(const catalog::ModelConfig& config, std::uint64_t s, std::uint64_t b,
                            plan::Checkpointing checkpointing, catalog::Attention attention,
                            std::uint64_t now, report::PlanInputs& in) {
  auto choice = [&](std::string change, std::uint64_t batch, plan::Checkpointing c,
                    catalog::Attention a) {
    const auto alt = catalog::model_activation_bytes(config, s, batch, c, a);
    if (alt && alt->total < now) in.activation_choices.push_back({std::move(change), alt->total});
  };
  const std::string full = field_ref("checkpointing") + " full";
  const std::string flash = field_ref("attention") + " flash";
  const bool can_checkpoint = checkpointing != plan::Checkpointing::full;
  const bool can_flash = attention == catalog::Attention::eager;
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

// Activations of a published model, from its config and --seq-len, --micro-batch.
void read_model_activations(const PlanFlags& f, const MicroBatch& micro_batch,
                            const catalog::ModelConfig& config, report::PlanInputs& in) {
  const std::string model_flag = f.model.empty() ? "--model-config" : "--model";
  if (f.seq_len.empty() && !micro_batch.value) {
    for (const auto& [flag, text] :
         {std::pair{"--checkpointing", &f.checkpointing}, {"--attention", &f.attention}}) {
      if (!text->empty()) {
        throw UsageError(std::string(flag) + ": needs --seq-len and --micro-batch");
      }
    }
    // A model's activations are most of what decides a fit: without the sequence and the
    // batch they are unknown, and a plan that counted them as zero would claim fits it has
    // not checked. --activations 0B asks for the model state alone, knowingly.
    if (f.activations.empty()) {
      throw UsageError("--seq-len, --micro-batch: required with " + model_flag +
                       " to count its activations, whole numbers such as --seq-len 4096 "
                       "--micro-batch 1 (or --activations 0B for the model state alone)");
    }
    read_given_activations(f, in);
    return;
  }
  if (!f.activations.empty()) {
    throw UsageError(
        "--activations: not with --seq-len and --micro-batch, from which they are computed");
  }
  if (f.seq_len.empty()) {
    throw UsageError("--seq-len: required with " + model_flag + " and a micro-batch (" +
                     (f.micro_batch.empty() ? "the DeepSpeed config's " + micro_batch.text
                                            : "--micro-batch " + micro_batch.text) +
                     ") to count its activations, a whole number such as 4096");
  }
  if (!micro_batch.value) {
    throw UsageError("--micro-batch: required with " + model_flag +
                     " and --seq-len to count its activations, a whole number such as 1");
  }
  const std::uint64_t s = units::parse_whole(f.seq_len, "--seq-len");
  const std::uint64_t b = *micro_batch.value;
  const plan::Checkpointing checkpointing = parse_checkpointing(f.checkpointing);
  const catalog::Attention attention = parse_attention(f.attention);
  const auto bytes = catalog::model_activation_bytes(config, s, b, checkpointing, attention);
  if (!bytes) {
    throw UsageError(
        "--seq-len, --micro-batch: expected a size whose activation bytes fit in "
        "64 bits");
  }
  in.activation_bytes = bytes->total;
  in.activations_given = true;
  in.activations_from = field_ref("seq_len") + ", " + field_ref("micro_batch");
  add_activation_choices(config, s, b, checkpointing, attention, bytes->total, in);
  in.activations_source = in.model->name + ": s=" + f.seq_len + " b=" + micro_batch.text +
                          ", checkpointing " +
                          std::string(plan::checkpointing_name(checkpointing)) + ", " +
                          std::string(catalog::attention_name(attention)) + " attention; layers " +
                          units::format_bytes(bytes->layers) + ", logits and loss " +
                          units::format_bytes(bytes->logits_and_loss);
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
                          " a=" + f.heads + " s=" + f.seq_len + " b=" + micro_batch.text +
                          ", checkpointing " + std::string(plan::checkpointing_name(checkpointing));
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
    m.name = f.model_config;
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
  if (!json) {
    std::printf("%-16s %-10s %18s %18s  %s\n", "--model", "type", "parameters", "active",
                "config published as");
  }
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
    std::printf("%-16.*s %-10s %18s %18s  %.*s\n", int(m.name.size()), m.name.data(),
                c.model_type.c_str(), units::format_count(p.params).c_str(),
                units::format_count(p.active_params).c_str(), int(m.hf_id.size()), m.hf_id.data());
  }
  if (json) std::printf("%s\n", all.dump(2).c_str());
}

deepspeed::OffloadDevice parse_offload(const std::string& text, const char* flag) {
  if (text.empty() || text == "none") return deepspeed::OffloadDevice::none;
  if (text == "cpu") return deepspeed::OffloadDevice::cpu;
  if (text == "nvme") return deepspeed::OffloadDevice::nvme;
  throw UsageError(std::string(flag) + ": expected none, cpu or nvme, got " + quote(text));
}

// The flags a DeepSpeed config also sets, typed; --bytes-per-param's P,G,K returned.
std::optional<plan::BytesPerParam> read_settings(const PlanFlags& f, report::SharedSettings& s) {
  const std::optional<plan::BytesPerParam> given = read_precision_flags(f.model_bytes, s);
  if (!f.stage.empty()) s.stage = parse_stage(f.stage);
  if (!f.offload_optimizer.empty()) {
    s.offload_optimizer = parse_offload(f.offload_optimizer, "--offload-optimizer");
  }
  if (!f.offload_params.empty()) {
    s.offload_params = parse_offload(f.offload_params, "--offload-params");
  }
  if (!f.micro_batch.empty()) s.micro_batch = units::parse_whole(f.micro_batch, "--micro-batch");
  s.seq_len_given = !f.seq_len.empty();
  s.zeropp = read_zeropp(f);
  return given;
}

// --framework: DeepSpeed's mechanics for every row, or FSDP's (FULL_SHARD) for ZeRO-3's. FSDP
// is planned from a model's layers and without DeepSpeed's own settings.
void read_framework(const PlanFlags& f, const report::SharedSettings& settings,
                    const std::optional<plan::BytesPerParam>& given_bpp, report::PlanInputs& in) {
  if (!f.limit_all_gathers.empty()) {
    if (f.framework != "fsdp") {
      throw UsageError("--limit-all-gathers: applies to --framework fsdp, FSDP's setting");
    }
    if (f.limit_all_gathers != "on" && f.limit_all_gathers != "off") {
      throw UsageError("--limit-all-gathers: expected on or off, got " +
                       quote(f.limit_all_gathers));
    }
    in.fsdp_limit_all_gathers = f.limit_all_gathers == "on";
  }
  if (f.framework.empty()) return;
  const auto framework = deepspeed::framework_from_name(f.framework);
  if (!framework) {
    throw UsageError("--framework: expected deepspeed or fsdp, got " + quote(f.framework));
  }
  in.framework = *framework;
  if (*framework != deepspeed::Framework::fsdp) return;
  const char* why = nullptr;
  if (!in.model) {
    why = "needs --model or --model-config (FSDP's units are the model's layers)";
  } else if (!f.deepspeed_config.empty()) {
    why = "not with --deepspeed-config, a DeepSpeed run's settings";
  } else if (settings.zeropp) {
    why = "not with --zeropp, which is DeepSpeed's";
  } else if (settings.offload_optimizer.value_or(deepspeed::OffloadDevice::none) !=
                 deepspeed::OffloadDevice::none ||
             settings.offload_params.value_or(deepspeed::OffloadDevice::none) !=
                 deepspeed::OffloadDevice::none) {
    why = "not with --offload-optimizer or --offload-params (FSDP's CPU offload is not planned)";
  }
  if (why) throw UsageError(std::string("--framework fsdp: ") + why);
  if (settings.stage && *settings.stage != Stage::zero3) {
    throw UsageError("--stage: expected 3 with --framework fsdp (FULL_SHARD, ZeRO-3's row), got " +
                     std::to_string(stage_number(*settings.stage)));
  }
  // Under a MixedPrecision policy FSDP's shards stay fp32; with --bytes-per-param they are
  // the gradients' bytes given.
  in.fsdp_shard_bytes = given_bpp ? given_bpp->grads : 4;
}

}  // namespace

report::PlanInputs read_inputs(const PlanFlags& f) {
  report::PlanInputs in;
  report::SharedSettings settings;
  const std::optional<plan::BytesPerParam> given_bpp = read_settings(f, settings);
  if (!f.params.empty()) in.params = units::parse_count(f.params, "--params");
  catalog::ModelConfig config;
  in.model = read_model(f, config);
  if (in.model) in.params = in.model->params.params;
  std::string zeropp_source = settings.zeropp ? "--zeropp" : "";
  std::optional<deepspeed::DeepSpeedConfig> ds;
  if (!f.deepspeed_config.empty()) {
    ds = read_deepspeed_config(f);
    settings = apply_deepspeed_config(f, *ds, settings, config.hidden, in);
    if (ds->zeropp.any()) zeropp_source = f.deepspeed_config;
  }
  read_framework(f, settings, given_bpp, in);
  read_optimizer_impl(f, ds ? &*ds : nullptr, settings.optimizer, in);
  // FSDP's row steps with torch's AdamW unless told otherwise; DeepSpeed's rows keep theirs.
  in.fsdp_optimizer_impl =
      f.optimizer_impl.empty() ? deepspeed::OptimizerImpl::foreach : in.optimizer_impl;
  const ModelBytes model = model_bytes(f.model_bytes, settings, given_bpp);
  in.bpp = model.bpp;
  in.bpp_source = model.source;
  in.fp16_optimizer =
      !given_bpp && settings.precision.value_or(plan::Precision::fp16) == plan::Precision::fp16;
  in.configured_stage = settings.stage;
  in.offload.optimizer = settings.offload_optimizer.value_or(deepspeed::OffloadDevice::none);
  in.offload.params = settings.offload_params.value_or(deepspeed::OffloadDevice::none);
  if (!f.gpus.empty()) in.gpus = parse_gpu_count(f.gpus, "--gpus", 1, INT_MAX);
  read_gpu_memory(f, in);
  const MicroBatch micro_batch{settings.micro_batch, f.micro_batch.empty() && settings.micro_batch
                                                         ? std::to_string(*settings.micro_batch)
                                                         : f.micro_batch};
  if (in.model) {
    read_model_activations(f, micro_batch, config, in);
  } else {
    read_activations(f, micro_batch, in);
  }
  if (!f.round_to.empty()) in.round_to = units::parse_whole(f.round_to, "--round-to");
  if (f.both_directions) in.seed_directions = plan::Directions::both;
  if (!f.compute_time.empty()) {
    in.compute_seconds = units::parse_seconds(f.compute_time, "--compute-time");
  }
  if (!f.bandwidth.empty()) in.bandwidth = units::parse_bandwidth(f.bandwidth, "--bandwidth");
  if (!f.overlap.empty()) in.overlap = units::parse_fraction(f.overlap, "--overlap");
  if (!f.comm_bytes.empty()) in.comm_bytes = units::parse_bytes(f.comm_bytes, "--comm-bytes");
  read_topology(f, {settings.zeropp.value_or(report::ZeroPlusPlusRequest{}), zeropp_source}, in);
  read_runtime(f, config, in);
  if (f.comm_convention == "seed") {
    in.time_convention = report::CommConvention::seed;
  } else if (f.comm_convention == "ring") {
    in.time_convention = report::CommConvention::ring;
  } else if (!f.comm_convention.empty()) {
    throw UsageError("--comm-convention: expected seed or ring, got " + quote(f.comm_convention));
  }
  return in;
}

namespace {

// An option of `zerodp plan`, read as text (parsed by read_inputs, naming the flag).
void add_text_option(CLI::App& cmd, const char* name, std::string& into, const char* help,
                     const char* type) {
  cmd.add_option(name, into, help)->type_name(type);
}

}  // namespace

void add_model_options(CLI::App* cmd, PlanFlags& f) {
  auto opt = [cmd](const char* name, std::string& into, const char* help, const char* type) {
    add_text_option(*cmd, name, into, help, type);
  };
  opt("--params", f.params, "parameters: 1e9, 7.5B, 175B, 50M", "COUNT");
  opt("--model", f.model, "a published model by name (--list-models): its exact parameter count",
      "NAME");
  opt("--model-config", f.model_config,
      "a Hugging Face config.json (gpt2, gpt_neox, the llama family, mixtures, deepseek_v2: "
      "docs/planner.md): its exact parameter count",
      "FILE");
  cmd->add_flag("--list-models", f.list_models,
                "list the models --model knows (with --json, as JSON), and exit");
  opt("--estimator", f.estimator,
      "deepspeed: also print DeepSpeed's own ZeRO-2/3 estimate for the same model and GPUs",
      "NAME");
  opt("--largest-layer", f.largest_layer,
      "with --params: the largest layer's parameters (--estimator's ZeRO-3 estimate, the "
      "buffers' gathered params)",
      "COUNT");
  opt("--deepspeed-config", f.deepspeed_config,
      "a DeepSpeed config (ds.json): its stage, offload, precision, optimizer and micro-batch",
      "FILE");
  opt("--framework", f.framework,
      "deepspeed (the default) or fsdp (PyTorch's FSDP, FULL_SHARD in ZeRO-3's row, with "
      "--model): whose mechanics make the GPU peak",
      "NAME");
  opt("--limit-all-gathers", f.limit_all_gathers,
      "on (the default) or off: FSDP's limit_all_gathers; off, every unit may be gathered at "
      "once (with --framework fsdp)",
      "ON|OFF");
  opt("--optimizer-impl", f.optimizer_impl,
      "fused (DeepSpeed's FusedAdam, DeepSpeed's default), foreach (the default under FSDP) or "
      "single (torch's AdamW): the optimizer step's temporaries in the GPU peak",
      "IMPL");
  opt("--offload-optimizer", f.offload_optimizer,
      "none (default), cpu or nvme: the optimizer states leave the GPU (ZeRO-1, 2, 3)", "DEVICE");
  opt("--offload-params", f.offload_params,
      "none (default), cpu or nvme: the 16-bit params leave the GPU (ZeRO-3)", "DEVICE");
  opt("--gpus-per-node", f.gpus_per_node,
      "GPUs per node n: the level inside a node, the offload's host memory per node, "
      "--estimator's [1]",
      "N");
  opt("--nodes", f.nodes, "nodes k: N = n x k GPUs (with --gpus-per-node)", "K");
  opt("--intra-bandwidth", f.intra_bandwidth,
      "bandwidth per GPU inside a node: 300GB/s (NVLink); with --inter-bandwidth, the step's "
      "comm time from both levels",
      "RATE");
  opt("--inter-bandwidth", f.inter_bandwidth,
      "bandwidth per GPU across nodes: 50GB/s, 400Gbit/s (InfiniBand)", "RATE");
  opt("--zeropp", f.zeropp,
      "ZeRO++ at ZeRO-3: none or a list of qwz (int8 weights), hpz (a copy sharded in the node), "
      "qgz (int4 gradients)",
      "LIST");
  opt("--buffers", f.buffers,
      "deepspeed (default with --model or --deepspeed-config) or none: DeepSpeed's buffers in "
      "the GPU peak",
      "KIND");
  opt("--cuda-overhead", f.cuda_overhead,
      "CUDA context and allocator per GPU in the peak: 2GB by default with --model or "
      "--deepspeed-config, else 0",
      "BYTES");
}

// The GPUs: how many, the stage, their memory; and the activations they hold.
void add_gpu_options(CLI::App* cmd, PlanFlags& f) {
  auto opt = [cmd](const char* name, std::string& into, const char* help, const char* type) {
    add_text_option(*cmd, name, into, help, type);
  };
  opt("--gpus", f.gpus, "data-parallel GPUs N (ranks)", "N");
  opt("--stage", f.stage,
      "the stage you will run, 0-3: a note says whether it fits at N, why, and whether "
      "offloading the optimizer would make it fit",
      "S");
  opt("--gpu", f.gpu,
      "the GPU by name (--list-gpus): a100-80gb, h100-80gb, rtx-4090 ...; its memory as CUDA "
      "reports it",
      "NAME");
  cmd->add_flag("--list-gpus", f.list_gpus,
                "list the GPUs --gpu knows (with --json, as JSON), and exit");
  opt("--gpu-memory", f.gpu_memory,
      "memory per GPU: 80GB, 24GiB, 23.65GiB (as an out-of-memory message prints it)", "BYTES");
  opt("--activations", f.activations, "activation memory per GPU: 12GB", "BYTES");
  opt("--layers", f.layers, "transformer layers L (activations from the shape)", "N");
  opt("--hidden", f.hidden, "hidden size h", "N");
  opt("--heads", f.heads, "attention heads a", "N");
  opt("--seq-len", f.seq_len, "sequence length s (with the shape, or with --model)", "N");
  opt("--micro-batch", f.micro_batch, "micro-batch size b per GPU (with the shape, or --model)",
      "N");
  opt("--checkpointing", f.checkpointing, "none (default), selective or full", "KIND");
  opt("--attention", f.attention,
      "with --model: eager (default; keeps the s^2 scores) or flash (keeps none)", "KIND");
}

// The bytes per parameter, the least N's rounding, the step's time, and the output.
void add_step_options(CLI::App* cmd, PlanFlags& f) {
  auto opt = [cmd](const char* name, std::string& into, const char* help, const char* type) {
    add_text_option(*cmd, name, into, help, type);
  };
  add_precision_flags(*cmd, f.model_bytes);
  opt("--round-to", f.round_to, "round the least N up to a multiple of this node size", "K");
  cmd->add_flag("--count-both-directions", f.both_directions,
                "'comm seed' column (the ZeRO paper's count of one direction): count bytes "
                "sent and received (doubles it)");
  opt("--compute-time", f.compute_time, "compute time per step: 10s, 250ms", "TIME");
  opt("--bandwidth", f.bandwidth, "bandwidth per GPU: 300GB/s", "RATE");
  opt("--overlap", f.overlap, "fraction of communication hidden behind compute: 0.6 or 60%",
      "FRACTION");
  opt("--comm-bytes", f.comm_bytes, "communication volume per step for every stage: 2.06TB",
      "BYTES");
  opt("--comm-convention", f.comm_convention,
      "column the communication time is computed from: ring (the bytes a ring collective "
      "really sends, default) or seed (the ZeRO paper's count: per parameter, 2 bytes for "
      "DP and 6 for ZeRO-3, times (N-1)/N)",
      "NAME");
  cmd->add_flag("--binary", f.binary, "print GiB/TiB instead of GB/TB");
  cmd->add_flag("--json", f.json, "print the plan as JSON (a contract: see docs/planner.md)");
}

namespace {

void add_plan_command(CLI::App& root) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd = root.add_subcommand(
      "plan",
      "Memory and communication per GPU of DP and ZeRO-1/2/3: totals, floors (the memory as N "
      "grows without bound), least N for a GPU, largest model, step efficiency, cheapest stage "
      "that fits (see docs/planner.md)");
  PlanFlags& f = *flags;
  add_model_options(cmd, f);
  add_gpu_options(cmd, f);
  add_step_options(cmd, f);
  auto link = std::make_shared<LinkFlags>();
  add_link_flags(*cmd, *link);
  cmd->callback([flags, link, cmd] {
    if (flags->list_models) {
      list_models(flags->json);
      return;
    }
    if (flags->list_gpus) {
      list_gpus(flags->json);
      return;
    }
    report::PlanInputs inputs = read_inputs(*flags);
    const std::optional<report::DeepSpeedEstimate> ds = read_estimator(*flags, inputs);
    const report::PlanReport report = report::make_plan(inputs);
    if (link->link) {
      std::printf("%s\n", page_link(*cmd, *link).c_str());
      return;
    }
    if (flags->json) {
      const std::string json = ds ? report::plan_json(report, *ds, flag_of_field)
                                  : report::plan_json(report, flag_of_field);
      std::printf("%s\n", json.c_str());
    } else {
      std::fputs(report::plan_table(report, flags->binary, flag_of_field).c_str(), stdout);
      if (ds) {
        std::fputs(report::deepspeed_comparison(*ds, report, flag_of_field).c_str(), stdout);
      }
    }
  });
}

const bool registered = register_command(10, add_plan_command);

}  // namespace
}  // namespace zerodp::cli

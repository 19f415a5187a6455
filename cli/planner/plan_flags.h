// The flags of `zerodp plan` as typed, and the readers that turn them into PlanInputs, shared
// by the command's files: plan.cc (the command, the model, its activations and the step),
// plan_gpus.cc (nodes, ZeRO++, the GPU peak's terms) and plan_deepspeed.cc (a DeepSpeed config
// and DeepSpeed's own estimate). Every reader throws UsageError with one line naming its flag.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan_options.h"
#include "zerodp/catalog/lora.h"
#include "zerodp/catalog/models.h"
#include "zerodp/deepspeed/config.h"
#include "zerodp/report/deepspeed.h"
#include "zerodp/report/report.h"
#include "zerodp/report/settings.h"

namespace zerodp::cli {

struct PlanFlags {
  std::string params, gpus, gpu_memory, gpu, activations, round_to;
  std::string model, model_config, attention;
  std::string lora_rank, lora_targets, lora_alpha, lora_dropout, modules_to_save, adapter_config;
  std::string quantize;
  std::string double_quant;
  std::string estimator, largest_layer, gpus_per_node, nodes;
  std::string offload_optimizer, offload_params, deepspeed_config, host_memory;
  std::string intra_bandwidth, inter_bandwidth, zeropp, buffers, cuda_overhead, stage;
  std::string optimizer_impl, framework, limit_all_gathers;
  bool list_models = false, list_gpus = false;
  std::string layers, hidden, heads, seq_len, micro_batch, checkpointing;
  std::string compute_time, bandwidth, overlap, comm_bytes, comm_convention;
  std::string intra_node, inter_node, efficiency, tokens, price_per_gpu_hour, grad_accum;
  bool list_links = false;
  PrecisionFlags model_bytes;
  bool both_directions = false, binary = false, json = false;
  bool wide = false;  // plan only: no width limit (report/table.h's kPlanColumns)
};

// The flags, on `zerodp plan` and on `zerodp plot --breakdown` (plot.cc), in three groups:
// the model and how it is run (sizes, DeepSpeed's config and estimate, offload, --list-models),
// the GPUs (count, memory, nodes, the peak's terms, --list-gpus), and the step and output
// (precision, round-to, time, --binary, --json).
void add_model_options(CLI::App* cmd, PlanFlags& f);
void add_gpu_options(CLI::App* cmd, PlanFlags& f);
void add_step_options(CLI::App* cmd, PlanFlags& f);

// Every flag read into the planner's inputs; each bad one is one line naming it.
report::PlanInputs read_inputs(const PlanFlags& f);

// The micro-batch as the flags and the config resolve it, and its text for the plan's header.
struct MicroBatch {
  std::optional<std::uint64_t> value;
  std::string text;  // as typed, or the config's value
};

// plan_model.cc.
// --model (the catalogue) or --model-config (a config.json file): its exact counts, with its
// config into `config`; nullopt with neither.
std::optional<report::ModelInput> read_model(const PlanFlags& f, catalog::ModelConfig& config);
// The activations of a published model, from its config and --seq-len, --micro-batch,
// --checkpointing and --attention, with the other choices the run could make (what would fit).
// A LoRA run's (`lora`) are its own (catalog/lora.h), and its step is not predicted yet.
// Returns the shape they were counted at; nullopt with --activations, given in bytes.
// The shape a model's activations were counted at (read_model_activations()).
struct ActivationShape {
  std::uint64_t seq_len = 0, micro_batch = 0;
  plan::Checkpointing checkpointing = plan::Checkpointing::none;
  catalog::Attention attention = catalog::Attention::sdpa;
};
std::optional<ActivationShape> read_model_activations(const PlanFlags& f,
                                                      const MicroBatch& micro_batch,
                                                      const catalog::ModelConfig& config,
                                                      const catalog::LoraShape* lora,
                                                      report::PlanInputs& in);
// Without a model: --activations in bytes, or a transformer shape (all five flags), or none.
void read_activations(const PlanFlags& f, const MicroBatch& micro_batch, report::PlanInputs& in);
// --list-models: the catalogue, as a table or (with --json) an array of {name, model_type,
// params, active_params, hf_id, published_params}.
void list_models(bool json);

// plan_lora.cc. After read_model() and the bytes per parameter: a LoRA or QLoRA run of the
// model (--lora-rank and its flags, --adapter-config, --quantize) sets the plan's Φ to what
// trains and its frozen base (report.h's LoraInput); returns what was asked and what its saved
// tensors are counted from, nullopt for a full fine-tune.
struct LoraAsked {
  catalog::LoraSettings settings;
  bool nf4 = false;
  bool double_quant = true;  // --double-quant: NF4's absmax in 8 bits (on) or fp32 (off)
  catalog::LoraShape shape;
};
std::optional<LoraAsked> read_lora(const PlanFlags& f, const catalog::ModelConfig& config,
                                   report::PlanInputs& in);

// With N and a GPU memory: the same model trained the other ways beside the run asked (a full
// fine-tune, LoRA rank 16 on every linear, QLoRA), counted at the same shape
// (report.h's fine_tune_choices); none where a LoRA run is not planned (FSDP, ZeRO++, nodes).
void add_fine_tune_choices(const catalog::ModelConfig& config, const ActivationShape& shape,
                           const std::optional<LoraAsked>& asked, report::PlanInputs& in);

// A config is a few kilobytes; a file larger than this is not one (nor is /dev/zero).
inline constexpr std::uint64_t kMaxConfigBytes = 16 << 20;

// A config file's text: a regular file of at most kMaxConfigBytes (common/file.h), else one
// line naming `flag`, the reason and `expected`.
std::string read_file(const std::string& path, const char* flag, const char* expected);

// plan_gpus.cc. In this order: --zeropp, then --gpus-per-node and --nodes (N, the levels, the
// bandwidths, and ZeRO++ with hpz's partition resolved), then the peak's terms (--buffers,
// --cuda-overhead, --largest-layer).

// --zeropp qwz,hpz,qgz or none, typed; nullopt without the flag.
std::optional<ZeroPlusPlus> read_zeropp(const PlanFlags& f);

// What asks for ZeRO++ once the config is applied, and who asked: "--zeropp" or the config's
// path.
struct ZeroPlusPlusAsked {
  ZeroPlusPlus request;
  std::string source;
  bool any() const { return request.any(); }
};
void read_topology(const PlanFlags& f, const ZeroPlusPlusAsked& zeropp, report::PlanInputs& in);
// --gpu NAME (the memory the card reports) or --gpu-memory BYTES, one or the other.
void read_gpu_memory(const PlanFlags& f, report::PlanInputs& in);
// --list-gpus: the cards --gpu knows, what each reports and where that is from; with --json, an
// array of {name, device, sold_as, sold_gb, reported_bytes, reported_as, source}.
void list_gpus(bool json);
void read_runtime(const PlanFlags& f, const catalog::ModelConfig& config, report::PlanInputs& in);

// plan_step.cc. The predicted step's inputs (report.h's PlanInputs::step_compute and the rest):
// the card's rate and the efficiency (--efficiency or the published one), the nodes and links
// (--intra-node, --inter-node, the levels' bandwidths, or the card's usual server, each
// assumption listed), --tokens and --price-per-gpu-hour. After read_topology().
void read_step(const PlanFlags& f, report::PlanInputs& in);
// --list-links: the links --intra-node and --inter-node know, with their rates and sources (with
// --json, an array of {name, level, what, bus_bytes_per_second, measured, per_node, nominal,
// quoted, source}).
void list_links(bool json);

// plan_deepspeed.cc.
// --deepspeed-config: the file, read and parsed once (unknown keys: one warning).
deepspeed::DeepSpeedConfig read_deepspeed_config(const PlanFlags& f);
// The config applied to the settings the flags gave (and to `in`: its path, summary and buffer
// sizes, "auto" from `hidden`); a conflict is one line naming the flag. Returns the settings
// resolved.
report::SharedSettings apply_deepspeed_config(const PlanFlags& f,
                                              const deepspeed::DeepSpeedConfig& config,
                                              const report::SharedSettings& given,
                                              std::uint64_t hidden, report::PlanInputs& in);

// --optimizer-impl, or what the DeepSpeed config implies (`config`: null without one): a
// flag that contradicts the config's optimizer block is one line naming both, and so is one
// given with an SGD optimizer (the temporaries counted are Adam's and AdamW's).
void read_optimizer_impl(const PlanFlags& f, const deepspeed::DeepSpeedConfig* config,
                         std::optional<plan::Optimizer> optimizer, report::PlanInputs& in);

// --estimator deepspeed: what DeepSpeed's estimators are asked for the same model and GPUs
// (nullopt without it); sets N from --gpus-per-node and --nodes.
std::optional<report::DeepSpeedEstimate> read_estimator(const PlanFlags& f, report::PlanInputs& in);

}  // namespace zerodp::cli

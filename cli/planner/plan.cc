// `zerodp plan`: every cell of the seed's scenario matrix that the given flags determine, as
// one table (or JSON with --json). The arithmetic is the planner library's; this file only
// turns flags into PlanInputs, naming the flag in every error.
#include <climits>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "app.h"
#include "command.h"
#include "help.h"
#include "output.h"
#include "plan_flags.h"
#include "plan_link.h"
#include "plan_options.h"
#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/text_wrap.h"
#include "zerodp/common/units.h"
#include "zerodp/deepspeed/config.h"
#include "zerodp/plan/activations.h"
#include "zerodp/report/deepspeed.h"
#include "zerodp/report/json.h"
#include "zerodp/report/report.h"
#include "zerodp/report/table.h"

namespace zerodp::cli {

std::string read_file(const std::string& path, const char* flag, const char* expected) {
  // A text lent in memory for this flag (output.h: the Python module's dict).
  if (path == kInlineFile) {
    if (const std::string* text = InlineFiles::text_for(flag)) return *text;
  }
  std::string why;
  std::optional<std::string> text = read_bounded(path, kMaxConfigBytes, why);
  if (!text) {
    throw UsageError(std::string(flag) + ": cannot read " + quote(path) + " (" + why +
                     "; expected " + expected + ")");
  }
  return std::move(*text);
}

namespace {

deepspeed::OffloadDevice parse_offload(const std::string& text, const char* flag) {
  if (text.empty() || text == "none") return deepspeed::OffloadDevice::none;
  if (text == "cpu") return deepspeed::OffloadDevice::cpu;
  if (text == "nvme") return deepspeed::OffloadDevice::nvme;
  throw UsageError(std::string(flag) + ": expected none, cpu or nvme, got " + shown(text));
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
  if (!f.grad_accum.empty()) {
    s.grad_accum = units::parse_whole_in(f.grad_accum, "--grad-accum", 1, 1'000'000);
  }
  // A model's activations take a sequence length, given or assumed (plan_model.cc).
  s.seq_len_given = !f.seq_len.empty() || !f.model.empty() || !f.model_config.empty();
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
                       shown(f.limit_all_gathers));
    }
    in.fsdp_limit_all_gathers = f.limit_all_gathers == "on";
  }
  if (f.framework.empty()) return;
  const auto framework = deepspeed::framework_from_name(f.framework);
  if (!framework) {
    throw UsageError("--framework: expected deepspeed or fsdp, got " + shown(f.framework));
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
  if (settings.optimizer) {
    // FSDP hands the optimizer each parameter's own flat shard: bitsandbytes' size rule then
    // applies shard by shard, and pure bf16 changes the shards' own bytes; neither is planned.
    const OptimizerRow& row = optimizer_row(*settings.optimizer);
    if (row.block > 0 || row.pure_bf16) {
      throw UsageError("--optimizer " + std::string(row.word) +
                       ": not planned with --framework fsdp, which hands the optimizer each "
                       "parameter's own shard (" +
                       (row.pure_bf16 ? "pure bf16 changes the shards' bytes"
                                      : "its 32-bit rule for small tensors applies shard by "
                                        "shard") +
                       "); plan it with DeepSpeed's flat partitions (--framework deepspeed)");
    }
  }
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
    if (ds->zeropp.any()) zeropp_source = printable(f.deepspeed_config);
  }
  read_framework(f, settings, given_bpp, in);
  read_optimizer_impl(f, ds ? &*ds : nullptr, settings.optimizer, in);
  // FSDP's row steps with torch's AdamW unless told otherwise; DeepSpeed's rows keep theirs.
  in.fsdp_optimizer_impl =
      f.optimizer_impl.empty() ? deepspeed::OptimizerImpl::foreach : in.optimizer_impl;
  const ModelBytes model = model_bytes(f.model_bytes, settings, given_bpp);
  in.bpp = model.bpp;
  in.bpp_source = model.source;
  const std::optional<LoraAsked> lora = read_lora(f, config, in);
  if (!given_bpp) {
    in.optimizer = settings.optimizer.value_or(plan::Optimizer::adam);
    in.precision = settings.precision.value_or(plan::Precision::bf16);
  }
  in.fp16_optimizer =
      !given_bpp && settings.precision.value_or(plan::Precision::bf16) == plan::Precision::fp16;
  // The seed's arithmetic is the same in fp16 and bf16; a model's or config's run is not.
  if (!given_bpp && !settings.precision && (in.model || ds)) {
    const bool pure =
        zerodp::optimizer_row(settings.optimizer.value_or(plan::Optimizer::adam)).pure_bf16;
    in.assumptions.push_back({field_ref("precision"), "bf16",
                              ds     ? "mixed; the DeepSpeed config leaves it to \"auto\""
                              : pure ? "pure: the optimizer keeps no fp32 master"
                                     : "mixed, with an fp32 master copy"});
  }
  in.configured_stage = settings.stage;
  in.offload.optimizer = settings.offload_optimizer.value_or(deepspeed::OffloadDevice::none);
  in.offload.params = settings.offload_params.value_or(deepspeed::OffloadDevice::none);
  if (!f.gpus.empty()) in.gpus = parse_gpu_count(f.gpus, "--gpus", 1, INT_MAX);
  if (!f.host_memory.empty()) in.host_memory = units::parse_bytes(f.host_memory, "--host-memory");
  read_gpu_memory(f, in);
  const MicroBatch micro_batch{settings.micro_batch, f.micro_batch.empty() && settings.micro_batch
                                                         ? std::to_string(*settings.micro_batch)
                                                         : f.micro_batch};
  std::optional<ActivationShape> shape;
  if (in.model) {
    shape = read_model_activations(f, micro_batch, config, lora ? &lora->shape : nullptr, in);
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
  read_topology(f, {settings.zeropp.value_or(ZeroPlusPlus{}), zeropp_source}, in);
  read_runtime(f, config, in);
  if (!f.grad_accum.empty() && lora && !in.step_compute) {
    throw UsageError(
        "--grad-accum: the step of a QLoRA run, or of LoRA with modules_to_save, is not "
        "predicted yet, and its micro-steps change no memory counted: leave --grad-accum out");
  }
  if (!f.grad_accum.empty() && !in.step_compute) {
    throw UsageError(
        "--grad-accum: times a model's step: needs --model or --model-config with its "
        "--seq-len and --micro-batch");
  }
  if (settings.grad_accum && in.step_compute) in.step_compute->grad_accum = *settings.grad_accum;
  read_step(f, in);
  if (shape) add_fine_tune_choices(config, *shape, lora, in);
  if (f.comm_convention == "seed") {
    in.time_convention = report::CommConvention::seed;
  } else if (f.comm_convention == "ring") {
    in.time_convention = report::CommConvention::ring;
  } else if (!f.comm_convention.empty()) {
    throw UsageError("--comm-convention: expected seed or ring, got " + shown(f.comm_convention));
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
  opt("--lora-rank", f.lora_rank,
      "LoRA: train adapters of this rank on the model's linears, the base frozen", "R");
  opt("--lora-targets", f.lora_targets,
      "the linears adapted: names such as q_proj,v_proj, or all-linear; default PEFT's for the "
      "family",
      "LIST");
  opt("--lora-alpha", f.lora_alpha, "LoRA's alpha (8, PEFT's default): no bytes change", "A");
  opt("--lora-dropout", f.lora_dropout,
      "LoRA's dropout before each adapter, 0 (default) to below 1: its mask and copy are kept",
      "P");
  opt("--modules-to-save", f.modules_to_save,
      "modules trained whole beside the adapters: embed_tokens, lm_head", "LIST");
  opt("--adapter-config", f.adapter_config,
      "PEFT's adapter_config.json: the LoRA run it describes (instead of the --lora flags)",
      "FILE");
  opt("--quantize", f.quantize,
      "nf4: QLoRA, the base's linears in 4-bit NormalFloat with double quantization", "KIND");
  opt("--double-quant", f.double_quant,
      "with --quantize nf4: on (the default, the QLoRA paper's) or off (bitsandbytes' default "
      "bnb_4bit_use_double_quant=False): each block's absmax in 8 bits or in fp32",
      "ON|OFF");
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
      "on (the default) or off: FSDP's limit_all_gathers; off, the CPU may issue all-gathers "
      "ahead, which costs allocator retries, not memory (with --framework fsdp)",
      "ON|OFF");
  opt("--optimizer-impl", f.optimizer_impl,
      "fused (DeepSpeed's FusedAdam, DeepSpeed's default), foreach (the default under FSDP) or "
      "single (torch's AdamW): the optimizer step's temporaries in the GPU peak",
      "IMPL");
  opt("--offload-optimizer", f.offload_optimizer,
      "none (default), cpu or nvme: the optimizer states leave the GPU (ZeRO-1, 2, 3)", "DEVICE");
  opt("--offload-params", f.offload_params,
      "none (default), cpu or nvme: the 16-bit params leave the GPU (ZeRO-3)", "DEVICE");
  opt("--host-memory", f.host_memory,
      "host memory per node: 64GB, 512GiB; the offload's host bytes are checked against it (a "
      "node holds --gpus-per-node GPUs, or all N)",
      "BYTES");
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
  opt("--intra-node", f.intra_node,
      "the link inside a node (--list-links): nvlink3, nvlink4, nvlink5, pcie4, pcie5; default "
      "the --gpu's usual server's",
      "LINK");
  opt("--inter-node", f.inter_node,
      "the network between nodes (--list-links): ib-hdr, ib-ndr, efa-p4d, efa-p5; default the "
      "--gpu's usual server's (A100: ib-hdr; H100, H200, B200: ib-ndr)",
      "LINK");
  cmd->add_flag("--list-links", f.list_links,
                "list the links --intra-node and --inter-node know, with their rates and "
                "sources (with --json, as JSON), and exit");
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
  opt("--seq-len", f.seq_len,
      "sequence length s (with the shape, or with --model: default 1024, run_clm's and TRL's)",
      "N");
  opt("--micro-batch", f.micro_batch,
      "micro-batch size b per GPU (with the shape, or with --model: default 8, the Trainer's)",
      "N");
  opt("--checkpointing", f.checkpointing, "none (default), selective or full", "KIND");
  opt("--grad-accum", f.grad_accum,
      "micro-steps per optimizer step, 1 to 1000000 (default 1, or the DeepSpeed config's "
      "gradient_accumulation_steps): the predicted step's tokens and collectives",
      "N");
  opt("--attention", f.attention,
      "with --model: sdpa (default, transformers'), flash (flash_attention_2) or eager (keeps "
      "the s^2 scores)",
      "KIND");
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
  opt("--efficiency", f.efficiency,
      "the fraction of the card's dense rate the step's FLOPs reach (HFU): 0.5 or 50%; default "
      "the median of published runs on the card (A100, H100)",
      "FRACTION");
  opt("--tokens", f.tokens,
      "tokens to train on: 1B, 15T; the wall clock and GPU-hours of each stage", "COUNT");
  opt("--price-per-gpu-hour", f.price_per_gpu_hour,
      "the price of a GPU-hour, in any currency: 2.5; the cost of --tokens", "PRICE");
  cmd->add_flag("--binary", f.binary, "print GiB/TiB instead of GB/TB");
  cmd->add_flag("--json", f.json, "print the plan as JSON (a contract: see docs/planner.md)");
}

namespace {

void add_plan_command(CLI::App& root) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd = root.add_subcommand("plan");
  describe_command(*cmd);
  PlanFlags& f = *flags;
  add_model_options(cmd, f);
  add_gpu_options(cmd, f);
  add_step_options(cmd, f);
  cmd->add_flag("--wide", f.wide,
                "print every table and line whole, however wide; by default no line is wider "
                "than 100 columns: a wider table is printed in parts, a longer line wrapped");
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
    if (flags->list_links) {
      list_links(flags->json);
      return;
    }
    report::PlanInputs inputs = read_inputs(*flags);
    const std::optional<report::DeepSpeedEstimate> ds = read_estimator(*flags, inputs);
    const report::PlanReport report = report::make_plan(inputs);
    if (link->link) {
      std::fprintf(out(), "%s\n", page_link(*cmd, *link).c_str());
      return;
    }
    if (flags->json) {
      const std::string json = ds ? report::plan_json(report, *ds, flag_of_field)
                                  : report::plan_json(report, flag_of_field);
      std::fprintf(out(), "%s\n", json.c_str());
    } else {
      const std::size_t width = flags->wide ? 0 : report::kPlanColumns;
      std::fputs(report::plan_table(report, flags->binary, flag_of_field, width).c_str(), out());
      if (ds) {
        const std::string comparison = report::deepspeed_comparison(*ds, report, flag_of_field);
        std::fputs((width ? wrap_long_lines(comparison, width) : comparison).c_str(), out());
      }
    }
  });
}

const bool plan_registered = register_command(10, add_plan_command);

}  // namespace
}  // namespace zerodp::cli

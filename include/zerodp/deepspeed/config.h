// A DeepSpeed config (ds.json) as `zerodp plan --deepspeed-config` reads it: the keys that
// change the plan, checked as DeepSpeed checks them (deepspeed/runtime/zero/config.py,
// offload_config.py as of v0.16.4), "auto" left to the command line as the Hugging Face
// integration leaves it to its TrainingArguments.
//
// Contract:
//  - Read and used: zero_optimization.stage, zero_optimization.offload_optimizer.device and
//    offload_param.device (none, cpu, nvme), bf16.enabled / fp16.enabled (neither: fp32),
//    optimizer.type (Adam, AdamW, SGD: the bytes per parameter), train_micro_batch_size_per_gpu
//    and gradient_accumulation_steps.
//  - Read into `buffers` (deepspeed/runtime.h), DeepSpeed's defaults where absent:
//    reduce_bucket_size, allgather_bucket_size, overlap_comm, contiguous_gradients,
//    stage3_prefetch_bucket_size, stage3_param_persistence_threshold,
//    stage3_max_live_parameters, stage3_max_reuse_distance, sub_group_size. "auto" for
//    reduce_bucket_size, stage3_prefetch_bucket_size and stage3_param_persistence_threshold is
//    flagged (*_auto) for the caller to fill from the model's hidden size h as the Hugging Face
//    integration does (h², 0.9·h², 10·h), and not listed in auto_keys; the others' "auto" keeps
//    DeepSpeed's default and is listed.
//  - Read into `zeropp` (deepspeed/topology.h): zero_quantized_weights, zero_hpz_partition_size,
//    zero_quantized_gradients.
//  - Keys DeepSpeed knows that do not change memory (scheduler, gradient_clipping, logging...)
//    are accepted silently; any other key is listed in `unknown` (one warning for all).
//  - "auto" for a value read: left to the flags (listed in `auto_keys`).
//  - Errors are UsageError with one line naming the file, the key and what it accepts: a value
//    of the wrong type or out of range, bf16 and fp16 both enabled, offload_param below stage 3,
//    offload of the optimizer at stage 0.
//  - Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zerodp/deepspeed/offload.h"
#include "zerodp/deepspeed/runtime.h"
#include "zerodp/deepspeed/topology.h"
#include "zerodp/plan/memory.h"

namespace zerodp::deepspeed {

// The most keys a line of the plan or a warning lists (the rest counted): a config is a file a
// user may not have written, and 3,000 unknown keys are not one line to read.
inline constexpr std::size_t kListedKeys = 20;

struct DeepSpeedConfig {
  std::optional<Stage> stage;
  OffloadDevice offload_optimizer = OffloadDevice::none;
  OffloadDevice offload_params = OffloadDevice::none;
  std::optional<plan::Precision> precision;  // from bf16 / fp16; fp32 when both are absent or off
  std::optional<plan::Optimizer> optimizer;
  // The step's implementation an "optimizer" block implies (runtime.h): FusedAdam for Adam and
  // AdamW, torch's AdamW with params.torch_adam (foreach; single with params.foreach false);
  // nullopt without a block, or for another type.
  std::optional<OptimizerImpl> optimizer_impl;
  bool optimizer_block = false;              // the config has an "optimizer" block
  std::optional<std::uint64_t> micro_batch;  // train_micro_batch_size_per_gpu
  std::optional<std::uint64_t> grad_accum;   // gradient_accumulation_steps
  BufferSettings buffers;
  bool reduce_bucket_auto = false, prefetch_bucket_auto = false, persistence_threshold_auto = false;
  ZeroPlusPlus zeropp;
  // Each list in key order ("zero_optimization.x" for nested keys).
  std::vector<std::string> auto_keys;    // "auto", left to the flags
  std::vector<std::string> not_in_plan;  // read and checked, not counted (an optimizer type)
  std::vector<std::string> unknown;      // not DeepSpeed keys this reader knows
};

// json_text: the file's contents; source names it in errors ("--deepspeed-config ds.json").
DeepSpeedConfig parse_deepspeed_config(std::string_view json_text, const std::string& source);

// What the config sets, in one line for the plan's header (PlanInputs::deepspeed_summary):
// "ZeRO-2, optimizer states to cpu, params to none, mixed bf16, micro-batch 4".
std::string deepspeed_config_summary(const DeepSpeedConfig& config);

}  // namespace zerodp::deepspeed

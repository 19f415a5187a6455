// The settings a DeepSpeed config shares with the planner's other inputs, and the one place
// where a parsed config meets them: apply_deepspeed_config().
//
// Contract:
//  - A setting the config sets wins where the other inputs leave it unset; where they set it
//    to something else, the result lists the conflict (the field, the config's key, the
//    config's value) and the caller decides how to say so. Nothing is parsed again: the
//    config arrives typed (deepspeed/config.h), the settings arrive typed.
//  - The config's micro-batch sizes activations only with a sequence length to go with it,
//    so it is taken only when `Shared::seq_len_given`.
//  - "auto" bucket sizes are filled from the model's hidden size h as the Hugging Face
//    integration fills them (reduce_bucket_size = h², stage3_prefetch_bucket_size = 0.9 h²,
//    stage3_param_persistence_threshold = 10 h), saturating rather than wrapping; without a
//    model (h = 0) they keep DeepSpeed's defaults, and the buffers' source says so.
//  - Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerodp/common/stage.h"
#include "zerodp/deepspeed/config.h"
#include "zerodp/report/report.h"

namespace zerodp::report {

// The settings, each unset (nullopt, false) when not given.
struct SharedSettings {
  std::optional<Stage> stage;
  std::optional<plan::Precision> precision;
  std::optional<plan::Optimizer> optimizer;
  bool bytes_per_param = false;  // P,G,K given directly, in place of precision and optimizer
  std::optional<deepspeed::OffloadDevice> offload_optimizer, offload_params;
  std::optional<std::uint64_t> micro_batch;
  std::optional<std::uint64_t> grad_accum;  // micro-steps per optimizer step
  bool seq_len_given = false;
  // What asks ZeRO++ of ZeRO-3: --zeropp (hpz over a node: hpz_size 0, settled once the
  // node's size is) or a config (hpz over its zero_hpz_partition_size).
  std::optional<ZeroPlusPlus> zeropp;
};

// A setting given one way and configured another. `field` names it as SharedSettings does
// ("precision", "optimizer", "bytes_per_param", "offload_optimizer", "offload_params",
// "micro_batch", "grad_accum", "stage", "zeropp"); `key` is the config's ("bf16/fp16",
// "zero_optimization.stage"); `value` the config's value in the words that name it ("bf16",
// "adam", "cpu", "4", "2", "qwZ, hpZ (8 GPUs), qgZ"). `excluded`: the setting cannot be given
// with this config at all (P,G,K bytes where the config sets the precision).
struct ConfigConflict {
  std::string field;
  std::string key;
  std::string value;
  bool excluded = false;
};

struct AppliedConfig {
  SharedSettings settings;                // the given ones, the config's filled in
  std::vector<ConfigConflict> conflicts;  // in the order the settings are listed above
};

// Applies `config`, read from `path`, to `given` and to `inputs`: the settings resolved and
// the conflicts; in `inputs`, the config's path and summary (deepspeed_config,
// deepspeed_summary) and its buffer sizes (buffer_settings, buffers_source), "auto" filled
// from `hidden` (the model's hidden size; 0 without a model).
AppliedConfig apply_deepspeed_config(const deepspeed::DeepSpeedConfig& config,
                                     const std::string& path, const SharedSettings& given,
                                     std::uint64_t hidden, PlanInputs& inputs);

// The short words that name a precision and an optimizer, as the flags and conflicts spell
// them: "fp16", "bf16", "fp32"; an optimizer's row word (zerodp/common/optimizers.h): "adam"
// (for Adam and AdamW: the same bytes), "adamw-8bit", "adafactor", "sgd-momentum", "sgd", ...
std::string_view precision_word(plan::Precision precision);
std::string_view optimizer_word(plan::Optimizer optimizer);
// What a word names (any name of the optimizer table: "adamw" and the Trainer's
// "adamw_torch_fused" name Adam too); nullopt for any other word.
std::optional<plan::Precision> precision_from_word(std::string_view word);
std::optional<plan::Optimizer> optimizer_from_word(std::string_view word);

}  // namespace zerodp::report

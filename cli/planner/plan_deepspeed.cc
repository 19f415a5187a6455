// `zerodp plan`'s DeepSpeed flags: a DeepSpeed config read into the flags (--deepspeed-config),
// and what DeepSpeed's own estimate is asked for (--estimator deepspeed).
#include <climits>
#include <cstdio>

#include "plan_flags.h"
#include "zerodp/common/error.h"
#include "zerodp/common/units.h"
#include "zerodp/deepspeed/estimator.h"

namespace zerodp::cli {

std::optional<report::DeepSpeedEstimate> read_estimator(const PlanFlags& f,
                                                        report::PlanInputs& in) {
  if (f.estimator.empty()) return std::nullopt;
  if (f.estimator != "deepspeed") {
    throw UsageError("--estimator: expected deepspeed, got " + quote(f.estimator));
  }
  if (!in.params) {
    throw UsageError("--params: required with --estimator deepspeed (or --model, --model-config)");
  }
  report::DeepSpeedEstimate run;
  run.params = *in.params;
  run.gpus_per_node = in.gpus_per_node.value_or(1);
  if (in.topology && !f.nodes.empty()) run.nodes = in.topology->nodes;
  if (!in.largest_layer) {
    throw UsageError(
        "--largest-layer: required with --estimator deepspeed and --params (ZeRO-3's estimate "
        "counts the largest layer), a count such as 65M");
  }
  run.largest_layer = *in.largest_layer;
  const std::uint64_t gpus = std::uint64_t(run.gpus_per_node) * run.nodes;
  if (in.gpus && std::uint64_t(*in.gpus) != gpus) {
    throw UsageError("--gpus: " + std::to_string(*in.gpus) + " is not --gpus-per-node x --nodes (" +
                     std::to_string(gpus) + "); give one or the other");
  }
  if (gpus > INT_MAX)
    throw UsageError("--nodes: expected at most " + std::to_string(INT_MAX) + " GPUs in all");
  in.gpus = static_cast<int>(gpus);
  in.gpus_per_node = run.gpus_per_node;
  return run;
}

// A value the config sets fills its flag; a flag that says otherwise is a contradiction.
// `agrees`: whether the flag as typed names what the config sets, where spellings differ.
void take_from_config(std::string& flag_value, const std::string& config_value, bool agrees,
                      const char* flag, const std::string& key, const std::string& file) {
  if (flag_value.empty()) {
    flag_value = config_value;
  } else if (!agrees) {
    throw UsageError(std::string(flag) + ": " + quote(flag_value) + " contradicts " + file + "'s " +
                     key + " (" + config_value + "); give one");
  }
}

void take_from_config(std::string& flag_value, const std::string& config_value, const char* flag,
                      const std::string& key, const std::string& file) {
  take_from_config(flag_value, config_value, flag_value == config_value, flag, key, file);
}

// --deepspeed-config: fills the flags the config sets (contradictions are errors) and returns
// what the plan says about it.
std::optional<deepspeed::DeepSpeedConfig> read_deepspeed_config(PlanFlags& f) {
  if (f.deepspeed_config.empty()) return std::nullopt;
  const std::string& path = f.deepspeed_config;
  deepspeed::DeepSpeedConfig c = deepspeed::parse_deepspeed_config(
      read_file(path, "--deepspeed-config", "a DeepSpeed config, ds.json"),
      "--deepspeed-config " + path);
  if (c.precision) {
    if (!f.model_bytes.bytes_per_param.empty()) {
      throw UsageError("--bytes-per-param: not with " + path +
                       ", whose bf16/fp16 sections set the precision");
    }
    std::string& typed = f.model_bytes.precision;
    take_from_config(typed, std::string(precision_word(*c.precision)),
                     !typed.empty() && precision_of(typed) == *c.precision, "--precision",
                     "bf16/fp16", path);
  }
  if (c.optimizer) {
    // Compared by what they name, not by spelling: --optimizer adamw agrees with "AdamW".
    std::string& typed = f.model_bytes.optimizer;
    take_from_config(typed, std::string(optimizer_word(*c.optimizer)),
                     !typed.empty() && optimizer_of(typed) == *c.optimizer, "--optimizer",
                     "optimizer.type", path);
  }
  const auto device = [](deepspeed::OffloadDevice d) {
    return std::string(deepspeed::offload_device_name(d));
  };
  if (c.offload_optimizer != deepspeed::OffloadDevice::none) {
    take_from_config(f.offload_optimizer, device(c.offload_optimizer), "--offload-optimizer",
                     "zero_optimization.offload_optimizer.device", path);
  }
  if (c.offload_params != deepspeed::OffloadDevice::none) {
    take_from_config(f.offload_params, device(c.offload_params), "--offload-params",
                     "zero_optimization.offload_param.device", path);
  }
  // The micro-batch sizes activations only with a sequence length to go with it.
  if (c.micro_batch && !f.seq_len.empty()) {
    take_from_config(f.micro_batch, std::to_string(*c.micro_batch), "--micro-batch",
                     "train_micro_batch_size_per_gpu", path);
  }
  if (!c.unknown.empty()) {
    std::fprintf(stderr, "zerodp: warning: %s: keys this reader does not know, ignored: %s\n",
                 path.c_str(), units::format_list(c.unknown).c_str());
  }
  return c;
}

}  // namespace zerodp::cli

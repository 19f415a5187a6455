// `zerodp plan`'s DeepSpeed: a DeepSpeed config read into the flags (--deepspeed-config), and
// DeepSpeed's own estimate printed beside the plan (--estimator deepspeed).
#include <climits>
#include <cstdio>

#include "plan_flags.h"
#include "zerodp/error.h"
#include "zerodp/plan_deepspeed.h"
#include "zerodp/units.h"

namespace zerodp::cli {

std::optional<DeepSpeedRun> read_estimator(const PlanFlags& f, plan::PlanInputs& in) {
  if (f.estimator.empty()) return std::nullopt;
  if (f.estimator != "deepspeed") {
    throw UsageError("--estimator: expected deepspeed, got " + quote(f.estimator));
  }
  if (!in.params) {
    throw UsageError("--params: required with --estimator deepspeed (or --model, --model-config)");
  }
  DeepSpeedRun run;
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

std::string deepspeed_section(const DeepSpeedRun& ds, const plan::PlanReport& report) {
  std::string out =
      "\nDeepSpeed's estimate, as DeepSpeed v0.16.4 prints it "
      "(estimate_zero2/3_model_states_mem_needs_all_cold):\n\n";
  out += plan::deepspeed_zero2_text(ds.params, ds.gpus_per_node, ds.nodes);
  out += "\n";
  out += plan::deepspeed_zero3_text(ds.params, ds.largest_layer, ds.gpus_per_node, ds.nodes);
  const auto gb = [](std::uint64_t b) { return units::format_bytes(b); };
  const plan::StageReport& z2 = report.stages[2];
  const plan::StageReport& z3 = report.stages[3];
  out += "\nzerodp for the same model on " + std::to_string(*report.inputs.gpus) +
         " GPUs, without offload: ZeRO-2 " + gb(*z2.model_state_bytes) + ", ZeRO-3 " +
         gb(*z3.model_state_bytes) +
         " of model state per GPU (GB = 1e9 bytes; DeepSpeed's GB "
         "is 2^30). Where the figures differ:\n";
  out +=
      "  - bytes per parameter: DeepSpeed's sharded part is 18 (16-bit and fp32 gradients, "
      "2 + 4; fp32 master, 4; Adam's m and v, 8: its code's comment) beside the 16-bit params "
      "(2); zerodp counts " +
      std::to_string(report.inputs.bpp.total()) + " (" + report.inputs.bpp_source + ": " +
      std::to_string(report.inputs.bpp.params) + " params + " +
      std::to_string(report.inputs.bpp.grads) + " grads + " +
      std::to_string(report.inputs.bpp.optimizer) +
      " optimizer), the seed's convention, with no fp32 copy of the gradients;\n";
  out += "  - ZeRO-3: DeepSpeed adds 4 x the largest layer (" +
         units::format_count(ds.largest_layer) +
         " params) for a layer gathered whole; zerodp's model state has no such term (its "
         "engine's gathered units are in `train --dry-run`'s peak);\n";
  out +=
      "  - neither side counts activations or buffers here: DeepSpeed's cold estimate is "
      "model states only; zerodp adds activations with --activations or --seq-len.\n";
  return out;
}

nlohmann::ordered_json deepspeed_json(const DeepSpeedRun& ds) {
  nlohmann::ordered_json j;
  j["version"] = "DeepSpeed v0.16.4, estimate_zero2/3_model_states_mem_needs_all_cold";
  j["gpus_per_node"] = ds.gpus_per_node;
  j["nodes"] = ds.nodes;
  j["largest_layer_params"] = ds.largest_layer;
  j["zero2"] = nlohmann::ordered_json::array();
  for (const plan::DeepSpeedRow& r :
       plan::deepspeed_zero2_cold(ds.params, ds.gpus_per_node, ds.nodes)) {
    j["zero2"].push_back({{"offload_optimizer", r.offload_optimizer},
                          {"cpu_bytes", r.cpu_bytes},
                          {"gpu_bytes", r.gpu_bytes}});
  }
  j["zero3"] = nlohmann::ordered_json::array();
  for (const plan::DeepSpeedRow& r :
       plan::deepspeed_zero3_cold(ds.params, ds.largest_layer, ds.gpus_per_node, ds.nodes)) {
    j["zero3"].push_back({{"offload_optimizer", r.offload_optimizer},
                          {"offload_params", r.offload_param},
                          {"zero_init", *r.zero_init},
                          {"cpu_bytes", r.cpu_bytes},
                          {"gpu_bytes", r.gpu_bytes}});
  }
  return j;
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
std::optional<plan::DeepSpeedConfig> read_deepspeed_config(PlanFlags& f) {
  if (f.deepspeed_config.empty()) return std::nullopt;
  const std::string& path = f.deepspeed_config;
  plan::DeepSpeedConfig c = plan::parse_deepspeed_config(
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
  const auto device = [](plan::OffloadDevice d) {
    return std::string(plan::offload_device_name(d));
  };
  if (c.offload_optimizer != plan::OffloadDevice::none) {
    take_from_config(f.offload_optimizer, device(c.offload_optimizer), "--offload-optimizer",
                     "zero_optimization.offload_optimizer.device", path);
  }
  if (c.offload_params != plan::OffloadDevice::none) {
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
                 path.c_str(), join(c.unknown).c_str());
  }
  return c;
}

std::string deepspeed_summary(const plan::DeepSpeedConfig& c) {
  std::vector<std::string> parts;
  if (c.stage) parts.push_back(std::string(plan::stage_name(*c.stage)));
  parts.push_back("optimizer states to " +
                  std::string(plan::offload_device_name(c.offload_optimizer)) + ", params to " +
                  std::string(plan::offload_device_name(c.offload_params)));
  if (c.precision) parts.push_back(std::string(plan::precision_name(*c.precision)));
  if (c.micro_batch) parts.push_back("micro-batch " + std::to_string(*c.micro_batch));
  if (c.grad_accum) parts.push_back("gradient accumulation " + std::to_string(*c.grad_accum));
  if (c.zeropp.any()) parts.push_back("ZeRO++ " + plan::zeropp_summary(c.zeropp));
  std::string out = join(parts);
  if (!c.auto_keys.empty()) out += "; \"auto\" left to the flags: " + join(c.auto_keys);
  if (!c.not_in_plan.empty()) out += "; read but not counted yet: " + join(c.not_in_plan);
  return out;
}

}  // namespace zerodp::cli

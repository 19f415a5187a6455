#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "zerodp/common/error.h"
#include "zerodp/common/json_text.h"
#include "zerodp/common/units.h"
#include "zerodp/deepspeed/config.h"

namespace zerodp::deepspeed {
namespace {

using json = nlohmann::json;

// Top-level keys DeepSpeed knows that change no memory the plan counts (runtime/constants.py).
constexpr std::string_view kHarmless[] = {"scheduler",
                                          "gradient_clipping",
                                          "steps_per_print",
                                          "wall_clock_breakdown",
                                          "train_batch_size",
                                          "communication_data_type",
                                          "zero_allow_untested_optimizer",
                                          "zero_force_ds_cpu_optimizer",
                                          "prescale_gradients",
                                          "gradient_predivide_factor",
                                          "sparse_gradients",
                                          "memory_breakdown",
                                          "dump_state",
                                          "flops_profiler",
                                          "tensorboard",
                                          "wandb",
                                          "csv_monitor",
                                          "comet",
                                          "comms_logger",
                                          "checkpoint",
                                          "aio",
                                          "seed",
                                          "dataloader_drop_last",
                                          "data_types",
                                          "amp",
                                          "activation_checkpointing",
                                          "compile",
                                          "gradient_accumulation_dtype",
                                          "disable_allgather",
                                          "elasticity",
                                          "sparse_attention"};
// zero_optimization's keys (runtime/zero/config.py), besides those read below.
constexpr std::string_view kZeroHarmless[] = {"reduce_scatter",
                                              "use_multi_rank_bucket_allreduce",
                                              "allgather_partitions",
                                              "load_from_fp32_weights",
                                              "elastic_checkpoint",
                                              "stage3_gather_16bit_weights_on_model_save",
                                              "stage3_gather_fp16_weights_on_model_save",
                                              "stage3_module_granularity_threshold",
                                              "stage3_use_all_reduce_for_fetch_params",
                                              "model_persistence_threshold",
                                              "ignore_unused_parameters",
                                              "legacy_stage1",
                                              "round_robin_gradients",
                                              "zero_quantized_nontrainable_weights",
                                              "zeropp_loco_param",
                                              "mics_shard_size",
                                              "mics_hierarchical_params_gather",
                                              "memory_efficient_linear",
                                              "pipeline_loading_checkpoint",
                                              "override_module_apply",
                                              "log_trace_cache_warnings",
                                              "cpu_offload_use_pin_memory"};
template <std::size_t N>
bool among(const std::string_view (&keys)[N], const std::string& key) {
  return std::find(std::begin(keys), std::end(keys), key) != std::end(keys);
}

// A value of the file as a message shows it: JSON, bounded, never a whole megabyte.
std::string shown_value(const json& v) {
  return cut_long(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

// A key of the file as a list names it: as it is, or quoted when it holds control characters
// or runs long.
std::string named(const std::string& key) {
  return printable(key, 64);
}

// The sizes DeepSpeed takes in elements, bounded so that every byte count derived from them
// (bytes per element times a few buffers) stays far inside 64 bits.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 48;

bool is_auto(const json& v) {
  return v.is_string() && v.get<std::string>() == "auto";
}

class Reader {
 public:
  Reader(const std::string& source, DeepSpeedConfig& out) : source_(source), out_(out) {}
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw UsageError(source_ + ": \"" + key + "\" " + what);
  }
  // A whole number from min to kMaxElements, or "auto" (nullopt, noted).
  std::optional<std::uint64_t> whole(const json& v, const std::string& key, std::uint64_t min = 1) {
    if (is_auto(v)) {
      out_.auto_keys.push_back(key);
      return std::nullopt;
    }
    std::uint64_t n = 0;
    // DeepSpeed accepts 5e8 written as a float when it is whole.
    if (v.is_number_float() && v.get<double>() >= double(min) && v.get<double>() < 1.8e19 &&
        v.get<double>() == static_cast<double>(static_cast<std::uint64_t>(v.get<double>()))) {
      n = static_cast<std::uint64_t>(v.get<double>());
    } else if (v.is_number_unsigned() && v.get<std::uint64_t>() >= min) {
      n = v.get<std::uint64_t>();
    } else {
      fail(key, "must be a whole number >= " + std::to_string(min) + " or \"auto\", got " +
                    shown_value(v));
    }
    if (n > kMaxElements) {
      fail(key,
           "must be at most " + std::to_string(kMaxElements) + " (2^48), got " + shown_value(v));
    }
    return n;
  }
  std::optional<bool> flag(const json& v, const std::string& key) {
    if (is_auto(v)) {
      out_.auto_keys.push_back(key);
      return std::nullopt;
    }
    if (!v.is_boolean()) fail(key, "must be true, false or \"auto\", got " + shown_value(v));
    return v.get<bool>();
  }
  OffloadDevice device(const json& section, const std::string& key) {
    if (!section.is_object()) fail(key, "must be an object such as {\"device\": \"cpu\"}");
    if (!section.contains("device")) return OffloadDevice::none;
    const json& d = section["device"];
    const std::string name = d.is_string() ? d.get<std::string>() : "";
    if (name == "none") return OffloadDevice::none;
    if (name == "cpu") return OffloadDevice::cpu;
    if (name == "nvme") return OffloadDevice::nvme;
    fail(key + ".device", "must be \"none\", \"cpu\" or \"nvme\", got " + shown_value(d));
  }

 private:
  const std::string& source_;
  DeepSpeedConfig& out_;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The zero_optimization keys that size buffers or turn on ZeRO++ (deepspeed/runtime.h,
// deepspeed/topology.h); false for any other key. "auto" sizes are left for the caller to fill as
// the Hugging Face integration does, from the model's hidden size.
bool read_buffer_key(Reader& r, const std::string& key, const json& v, const std::string& name,
                     DeepSpeedConfig& c) {
  BufferSettings& b = c.buffers;
  // A size; "auto" keeps DeepSpeed's default and is listed in auto_keys by the reader.
  auto size = [&](std::uint64_t& into, std::uint64_t min) {
    if (const auto n = r.whole(v, name, min)) into = *n;
  };
  // A size the Hugging Face integration fills from the model's hidden size: "auto" is flagged
  // for the caller to fill, not left to the flags.
  auto sized_by_model = [&](std::uint64_t& into, bool& auto_flag, std::uint64_t min) {
    if (is_auto(v)) {
      auto_flag = true;
    } else {
      size(into, min);
    }
  };
  auto flag = [&](auto& into) {
    if (const auto on = r.flag(v, name)) into = *on;
  };
  if (key == "reduce_bucket_size") {
    sized_by_model(b.reduce_bucket_size, c.reduce_bucket_auto, 1);
  } else if (key == "allgather_bucket_size") {
    size(b.allgather_bucket_size, 1);
  } else if (key == "stage3_prefetch_bucket_size") {
    sized_by_model(b.prefetch_bucket_size, c.prefetch_bucket_auto, 0);
  } else if (key == "stage3_param_persistence_threshold") {
    sized_by_model(b.param_persistence_threshold, c.persistence_threshold_auto, 0);
  } else if (key == "stage3_max_live_parameters") {
    size(b.max_live_parameters, 0);
  } else if (key == "stage3_max_reuse_distance") {
    size(b.max_reuse_distance, 0);
  } else if (key == "sub_group_size") {
    size(b.sub_group_size, 1);
  } else if (key == "overlap_comm") {
    flag(b.overlap_comm);
  } else if (key == "contiguous_gradients") {
    flag(b.contiguous_gradients);
  } else if (key == "zero_quantized_weights") {
    flag(c.zeropp.qwz);
  } else if (key == "zero_quantized_gradients") {
    flag(c.zeropp.qgz);
  } else if (key == "zero_hpz_partition_size") {
    std::uint64_t h = 1;
    size(h, 1);
    if (h > (1u << 20)) r.fail(name, "must be at most 1048576 GPUs, got " + shown_value(v));
    // DeepSpeed's 1 is hpZ off: no secondary partition.
    c.zeropp.hpz = h > 1;
    c.zeropp.hpz_size = h > 1 ? static_cast<int>(h) : 0;
  } else {
    return false;
  }
  return true;
}

// zero_optimization: the stage, offload (and its legacy spellings), the buffers' sizes.
void read_zero_optimization(Reader& r, const json& value, DeepSpeedConfig& c) {
  if (!value.is_object()) r.fail("zero_optimization", "must be an object such as {\"stage\": 2}");
  for (const auto& [zkey, zvalue] : value.items()) {
    const std::string name = "zero_optimization." + zkey;
    if (zkey == "stage") {
      if (!zvalue.is_number_unsigned() || zvalue.get<std::uint64_t>() > 3) {
        r.fail(name, "must be 0, 1, 2 or 3, got " + shown_value(zvalue));
      }
      c.stage = stage_from_number(static_cast<int>(zvalue.get<std::uint64_t>()));
    } else if (zkey == "offload_optimizer") {
      c.offload_optimizer = r.device(zvalue, name);
    } else if (zkey == "offload_param") {
      c.offload_params = r.device(zvalue, name);
    } else if (zkey == "cpu_offload") {  // the legacy spelling of offload_optimizer: cpu
      if (r.flag(zvalue, name).value_or(false)) c.offload_optimizer = OffloadDevice::cpu;
    } else if (zkey == "cpu_offload_param") {
      if (r.flag(zvalue, name).value_or(false)) c.offload_params = OffloadDevice::cpu;
    } else if (read_buffer_key(r, zkey, zvalue, name, c)) {
    } else if (!among(kZeroHarmless, zkey)) {
      c.unknown.push_back(named(name));
    }
  }
}

// optimizer.type: the bytes per parameter of the optimizers of the table (Adam, AdamW, LAMB,
// Lion, Adagrad, SGD ...); any other is read and listed, not counted.
void read_optimizer(Reader& r, const json& value, DeepSpeedConfig& c) {
  if (!value.is_object() || !value.contains("type") || !value["type"].is_string()) {
    r.fail("optimizer", "must be an object with a \"type\" such as \"AdamW\"");
  }
  c.optimizer_block = true;
  const std::string type = lower(value["type"].get<std::string>());
  if (type == "adam" || type == "adamw" || type == "cpuadam" || type == "fusedadam") {
    c.optimizer = plan::Optimizer::adam;
    // DeepSpeed builds torch's AdamW for params.torch_adam, else its FusedAdam
    // (runtime/engine.py:1415-1440); torch's takes foreach unless told otherwise.
    const json params = value.value("params", json::object());
    auto flag = [&](const char* key) {
      return params.is_object() && params.contains(key) && params[key].is_boolean()
                 ? std::optional<bool>(params[key].get<bool>())
                 : std::nullopt;
    };
    const bool torch_adam =
        (type == "adam" || type == "adamw") && flag("torch_adam").value_or(false);
    c.optimizer_impl = !torch_adam                      ? OptimizerImpl::fused
                       : flag("foreach").value_or(true) ? OptimizerImpl::foreach
                                                        : OptimizerImpl::single;
  } else if (type == "sgd") {
    const json params = value.value("params", json::object());
    const bool momentum = params.contains("momentum") && params["momentum"].is_number() &&
                          params["momentum"].get<double>() > 0;
    c.optimizer = momentum ? plan::Optimizer::sgd_momentum : plan::Optimizer::sgd;
  } else if (const auto row = optimizer_from_name(type)) {
    // LAMB, Lion, Adagrad, MuAdam...: the table's row (zerodp/common/optimizers.h); their
    // step's temporaries are the row's, not an AdamW implementation's.
    c.optimizer = row->id;
    c.optimizer_impl = OptimizerImpl::fused;
  } else {
    const std::string why = uncounted_optimizer(type);
    c.not_in_plan.push_back("optimizer.type " + named(value["type"].get<std::string>()) +
                            (why.empty() ? "" : " (" + why + ")"));
  }
  // SGD's step holds no copy of a state the size of the shard: no temporaries counted.
  if (type == "sgd") c.optimizer_impl = OptimizerImpl::fused;
}

// bf16.enabled and fp16.enabled as DeepSpeed reads them: one at most, fp32 when neither
// (unless one is "auto": left to the flags).
struct PrecisionKeys {
  std::optional<bool> bf16, fp16;  // nullopt: absent, or "auto"
  bool any_auto = false;
};

void read_precision(Reader& r, const std::string& key, const json& value, PrecisionKeys& p) {
  if (!value.is_object()) r.fail(key, "must be an object such as {\"enabled\": true}");
  const std::optional<bool> on =
      value.contains("enabled") ? r.flag(value["enabled"], key + ".enabled") : false;
  (key == "bf16" ? p.bf16 : p.fp16) = on;
  p.any_auto |= !on.has_value();
}

void settle_precision(const std::string& source, const PrecisionKeys& p, DeepSpeedConfig& c) {
  if (p.bf16.value_or(false) && p.fp16.value_or(false)) {
    throw UsageError(source + ": \"bf16.enabled\" and \"fp16.enabled\" are both true; enable one");
  }
  if (p.bf16.value_or(false)) {
    c.precision = plan::Precision::bf16;
  } else if (p.fp16.value_or(false)) {
    c.precision = plan::Precision::fp16;
  } else if (!p.any_auto) {
    c.precision = plan::Precision::fp32;  // DeepSpeed trains in fp32 unless one is enabled
  }
}

// Offload where DeepSpeed refuses it: the params below stage 3, the optimizer at stage 0.
void check_offload_stage(const std::string& source, const DeepSpeedConfig& c) {
  const Stage stage = c.stage.value_or(Stage::dp);
  if (c.offload_params != OffloadDevice::none && stage != Stage::zero3) {
    throw UsageError(source +
                     ": \"zero_optimization.offload_param\" needs stage 3, the config has "
                     "stage " +
                     std::to_string(stage_number(stage)));
  }
  if (c.offload_optimizer != OffloadDevice::none && stage == Stage::dp) {
    throw UsageError(source +
                     ": \"zero_optimization.offload_optimizer\" needs stage 1, 2 or 3, "
                     "the config has stage 0");
  }
}

}  // namespace

DeepSpeedConfig parse_deepspeed_config(std::string_view json_text, const std::string& source) {
  if (const std::string why = json_depth_refusal(json_text); !why.empty()) {
    throw UsageError(source + ": " + why);
  }
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond a double
    throw UsageError(source + ": not JSON (" +
                     escape_controls(std::string(e.what()).substr(0, 200)) + ")");
  }
  if (!j.is_object()) throw UsageError(source + ": expected a JSON object (a DeepSpeed config)");
  DeepSpeedConfig c;
  Reader r(source, c);
  PrecisionKeys precision;
  for (const auto& [key, value] : j.items()) {
    if (key == "zero_optimization") {
      read_zero_optimization(r, value, c);
    } else if (key == "bf16" || key == "fp16") {
      read_precision(r, key, value, precision);
    } else if (key == "optimizer") {
      read_optimizer(r, value, c);
    } else if (key == "train_micro_batch_size_per_gpu") {
      c.micro_batch = r.whole(value, key);
    } else if (key == "gradient_accumulation_steps") {
      c.grad_accum = r.whole(value, key);
    } else if (!among(kHarmless, key)) {
      c.unknown.push_back(named(key));
    }
  }
  settle_precision(source, precision, c);
  check_offload_stage(source, c);
  return c;
}

std::string deepspeed_config_summary(const DeepSpeedConfig& c) {
  std::vector<std::string> parts;
  if (c.stage) parts.push_back(std::string(stage_name(*c.stage)));
  parts.push_back("optimizer states to " + std::string(offload_device_name(c.offload_optimizer)) +
                  ", params to " + std::string(offload_device_name(c.offload_params)));
  if (c.precision) parts.push_back(std::string(plan::precision_name(*c.precision)));
  if (c.micro_batch) parts.push_back("micro-batch " + std::to_string(*c.micro_batch));
  if (c.grad_accum) parts.push_back("gradient accumulation " + std::to_string(*c.grad_accum));
  if (c.zeropp.any()) parts.push_back("ZeRO++ " + zeropp_summary(c.zeropp));
  std::string out = units::format_list(parts);
  if (!c.auto_keys.empty())
    out += "; \"auto\" left to the flags: " + units::format_list(c.auto_keys, kListedKeys);
  if (!c.not_in_plan.empty())
    out += "; read but not counted yet: " + units::format_list(c.not_in_plan, kListedKeys);
  return out;
}

}  // namespace zerodp::deepspeed

#include "zerodp/report/settings.h"

#include <climits>

#include "zerodp/common/units.h"

namespace zerodp::report {
namespace {

// Each value's words, the first of a value its own.
struct PrecisionWord {
  std::string_view word;
  plan::Precision value;
};
constexpr PrecisionWord kPrecisionWords[] = {{"fp16", plan::Precision::fp16},
                                             {"bf16", plan::Precision::bf16},
                                             {"fp32", plan::Precision::fp32}};

// The config's value where it has one: it fills an unset setting, and a set one that differs
// is a conflict.
template <typename T>
void take(std::optional<T>& setting, const std::optional<T>& configured, const char* field,
          const std::string& key, const std::string& value, AppliedConfig& applied) {
  if (!configured) return;
  if (setting && *setting != *configured) {
    applied.conflicts.push_back({field, key, value});
    return;
  }
  setting = configured;
}

std::optional<deepspeed::OffloadDevice> offloaded(deepspeed::OffloadDevice device) {
  if (device == deepspeed::OffloadDevice::none) return std::nullopt;
  return device;
}

std::string device_word(deepspeed::OffloadDevice device) {
  return std::string(deepspeed::offload_device_name(device));
}

// The config's ZeRO++ keys against --zeropp: the config's, with its partition size, win when
// the two name the same switches.
void take_zeropp(const deepspeed::DeepSpeedConfig& config, AppliedConfig& applied) {
  if (!config.zeropp.any()) return;
  std::optional<ZeroPlusPlus>& asked = applied.settings.zeropp;
  if (asked && (asked->qwz != config.zeropp.qwz || asked->qgz != config.zeropp.qgz ||
                asked->hpz != config.zeropp.hpz)) {
    applied.conflicts.push_back({"zeropp",
                                 "zero_quantized_weights, zero_hpz_partition_size and "
                                 "zero_quantized_gradients",
                                 deepspeed::zeropp_summary(config.zeropp)});
    return;
  }
  asked = config.zeropp;
}

// The buffers' sizes from the config, "auto" as the Hugging Face integration fills it.
void take_buffers(const deepspeed::DeepSpeedConfig& config, const std::string& path,
                  std::uint64_t h, PlanInputs& in) {
  in.buffer_settings = config.buffers;
  in.buffers_source = path;
  // h² saturates rather than wraps for a config's absurd hidden size.
  const std::uint64_t h2 = h != 0 && h > UINT64_MAX / h ? UINT64_MAX : h * h;
  std::vector<std::string> from_hidden;
  auto fill = [&](bool is_auto, std::uint64_t& into, std::uint64_t value, const char* key) {
    if (!is_auto || h == 0) return;
    into = value;
    from_hidden.push_back(key);
  };
  fill(config.reduce_bucket_auto, in.buffer_settings.reduce_bucket_size, h2,
       "reduce_bucket_size = h^2");
  fill(config.prefetch_bucket_auto, in.buffer_settings.prefetch_bucket_size,
       static_cast<std::uint64_t>((unsigned __int128)h2 * 9 / 10),
       "stage3_prefetch_bucket_size = 0.9 h^2");
  fill(config.persistence_threshold_auto, in.buffer_settings.param_persistence_threshold,
       h > UINT64_MAX / 10 ? UINT64_MAX : 10 * h, "stage3_param_persistence_threshold = 10 h");
  if (h == 0 && (config.reduce_bucket_auto || config.prefetch_bucket_auto ||
                 config.persistence_threshold_auto)) {
    in.buffers_source += "; \"auto\" sizes at DeepSpeed's defaults, no model to size them";
  }
  if (!from_hidden.empty()) {
    in.buffers_source += "; \"auto\" from h = " + std::to_string(h) +
                         " as Hugging Face fills it: " + units::format_list(from_hidden);
  }
}

}  // namespace

AppliedConfig apply_deepspeed_config(const deepspeed::DeepSpeedConfig& config,
                                     const std::string& path, const SharedSettings& given,
                                     std::uint64_t hidden, PlanInputs& in) {
  AppliedConfig applied{given, {}};
  SharedSettings& s = applied.settings;
  if (config.precision) {
    if (s.bytes_per_param) {
      applied.conflicts.push_back(
          {"bytes_per_param", "bf16/fp16", std::string(precision_word(*config.precision)), true});
    } else {
      take(s.precision, config.precision, "precision", "bf16/fp16",
           std::string(precision_word(*config.precision)), applied);
    }
  }
  if (config.optimizer) {
    take(s.optimizer, config.optimizer, "optimizer", "optimizer.type",
         std::string(optimizer_word(*config.optimizer)), applied);
  }
  take(s.offload_optimizer, offloaded(config.offload_optimizer), "offload_optimizer",
       "zero_optimization.offload_optimizer.device", device_word(config.offload_optimizer),
       applied);
  take(s.offload_params, offloaded(config.offload_params), "offload_params",
       "zero_optimization.offload_param.device", device_word(config.offload_params), applied);
  if (s.seq_len_given) {
    take(s.micro_batch, config.micro_batch, "micro_batch", "train_micro_batch_size_per_gpu",
         config.micro_batch ? std::to_string(*config.micro_batch) : "", applied);
  }
  take(s.grad_accum, config.grad_accum, "grad_accum", "gradient_accumulation_steps",
       config.grad_accum ? std::to_string(*config.grad_accum) : "", applied);
  take(s.stage, config.stage, "stage", "zero_optimization.stage",
       config.stage ? std::to_string(stage_number(*config.stage)) : "", applied);
  take_zeropp(config, applied);

  in.deepspeed_config = path;
  in.deepspeed_summary = deepspeed::deepspeed_config_summary(config);
  take_buffers(config, path, hidden, in);
  return applied;
}

std::string_view precision_word(plan::Precision precision) {
  for (const auto& w : kPrecisionWords) {
    if (w.value == precision) return w.word;
  }
  return "fp16";  // unreachable: every value has a word
}

std::string_view optimizer_word(plan::Optimizer optimizer) {
  return optimizer_row(optimizer).word;
}

std::optional<plan::Precision> precision_from_word(std::string_view word) {
  for (const auto& w : kPrecisionWords) {
    if (w.word == word) return w.value;
  }
  return std::nullopt;
}

std::optional<plan::Optimizer> optimizer_from_word(std::string_view word) {
  if (const auto named = optimizer_from_name(word)) return named->id;
  return std::nullopt;
}

}  // namespace zerodp::report

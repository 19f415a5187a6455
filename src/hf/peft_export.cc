#include "zerodp/hf/peft_export.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/hf/safetensors.h"

namespace zerodp::hf {
namespace {

// The weight of `unit` (a block of the base's layout) that LoRA target i adapts, by its name.
const model::TensorInfo& adapted_weight(const model::UnitInfo& unit, int i) {
  const std::string name = unit.name + "." + model::lora_target_name(i) + ".weight";
  for (const model::TensorInfo& t : unit.tensors) {
    if (t.name == name) return t;
  }
  ZERODP_CHECK_MSG(false, "a block without the weight LoRA adapts");
  return unit.tensors.front();
}

}  // namespace

std::string peft_adapter_config_json(const model::GptConfig& config,
                                     const std::string& base_model_name_or_path) {
  ZERODP_CHECK(config.lora_rank > 0);
  nlohmann::json targets = nlohmann::json::array();
  for (int i = 0; i < model::kLoraTargets; ++i) {
    if ((config.lora_targets >> i) & 1u) targets.push_back(model::lora_target_name(i));
  }
  const nlohmann::json j = {{"peft_type", "LORA"},
                            {"task_type", "CAUSAL_LM"},
                            {"base_model_name_or_path", base_model_name_or_path},
                            {"r", config.lora_rank},
                            {"lora_alpha", config.lora_alpha},
                            {"lora_dropout", 0.0},
                            {"target_modules", targets},
                            {"fan_in_fan_out", true},
                            {"bias", "none"},
                            {"modules_to_save", nullptr},
                            {"init_lora_weights", true},
                            {"inference_mode", true},
                            {"use_rslora", false},
                            {"use_dora", false}};
  return j.dump(2);
}

void export_peft_adapter(const model::GptConfig& config, const ParamReader& read,
                         const std::string& base_model_name_or_path, const std::string& dir) {
  ZERODP_CHECK(config.lora_rank > 0);
  const std::vector<model::UnitInfo> units = model::gpt_units(config);
  std::vector<TensorSpec> specs;
  std::vector<std::size_t> offsets;
  for (const model::UnitInfo& u : units) {
    for (const model::TensorInfo& t : u.tensors) {
      specs.push_back({"base_model.model.transformer." + t.name, t.shape});
      offsets.push_back(u.param_offset + t.offset);
    }
  }
  const std::filesystem::path folder(dir);
  write_safetensors((folder / "adapter_model.safetensors").string(), specs,
                    [&](std::size_t i, std::span<float> out) { read(offsets[i], out); },
                    {{"format", "pt"}});
  write_file_atomically((folder / "adapter_config.json").string(),
                        peft_adapter_config_json(config, base_model_name_or_path) + "\n");
}

ParamReader merged_reader(const model::GptConfig& config, ParamReader base,
                          std::vector<float> adapters) {
  ZERODP_CHECK(config.lora_rank > 0);
  struct Merge {
    std::size_t weight = 0;  // first element of W [out, in] in the base's layout
    std::size_t out = 0, in = 0;
    std::size_t a = 0, b = 0;  // A [R, in] and B [out, R] in the adapters
  };
  const std::vector<model::UnitInfo> lora = model::gpt_units(config);
  const std::vector<model::UnitInfo> base_units = model::gpt_base_units(config);
  ZERODP_CHECK(adapters.size() == config.lora_param_count());
  std::vector<Merge> merges;
  for (std::size_t u = 1; u + 1 < lora.size(); ++u) {
    std::size_t t = 0;
    for (int i = 0; i < model::kLoraTargets; ++i) {
      if (((config.lora_targets >> i) & 1u) == 0) continue;
      const model::TensorInfo& w = adapted_weight(base_units[u], i);
      merges.push_back({base_units[u].param_offset + w.offset, w.shape[0], w.shape[1],
                        lora[u].param_offset + lora[u].tensors[t].offset,
                        lora[u].param_offset + lora[u].tensors[t + 1].offset});
      t += 2;
    }
  }
  const std::size_t R = std::size_t(config.lora_rank);
  const float scale = config.lora_alpha / float(config.lora_rank);
  return [base = std::move(base), adapters = std::move(adapters), merges, R, scale](
             std::size_t offset, std::span<float> out) {
    base(offset, out);
    const std::size_t end = offset + out.size();
    for (const Merge& m : merges) {
      const std::size_t first = std::max(offset, m.weight);
      const std::size_t last = std::min(end, m.weight + m.out * m.in);
      for (std::size_t e = first; e < last; ++e) {
        const std::size_t o = (e - m.weight) / m.in, k = (e - m.weight) % m.in;
        float delta = 0.0f;  // (B A)[o, k], the R products summed in order
        for (std::size_t r = 0; r < R; ++r) {
          delta += adapters[m.b + o * R + r] * adapters[m.a + r * m.in + k];
        }
        out[e - offset] += delta * scale;
      }
    }
  };
}

}  // namespace zerodp::hf

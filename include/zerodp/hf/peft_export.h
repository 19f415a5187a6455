// A LoRA run's adapters as PEFT writes them, and the base with the adapters merged into it.
//
// PEFT's adapter folder (PeftModel.save_pretrained of a GPT2LMHeadModel wrapped by a LoraConfig):
//  - adapter_model.safetensors: for each block i and adapted module M (attn.c_attn, attn.c_proj,
//    mlp.c_fc, mlp.c_proj), "base_model.model.transformer.h.{i}.{M}.lora_A.weight" [R, in] and
//    "....lora_B.weight" [out, R], F32, in the flat layout's order. GPT-2's modules are Conv1D,
//    whose weight is [in, out]; PEFT keeps lora_A and lora_B as nn.Linear weights all the same
//    (fan_in_fan_out = true), so they are GptModel's A and B as they are.
//  - adapter_config.json: peft_type LORA, task_type CAUSAL_LM, r, lora_alpha, lora_dropout 0,
//    target_modules (the qualified names: PEFT matches a module whose name ends with one),
//    fan_in_fan_out true, bias "none", and base_model_name_or_path as given.
// Merged: each adapted weight W [out, in] (GptModel's layout) becomes W + (alpha / R) B A, the
// sum in fp32 of the R products in order, what PEFT's merge_and_unload computes; every other
// tensor is the base's.
#pragma once

#include <string>
#include <vector>

#include "zerodp/hf/gpt_export.h"
#include "zerodp/model/gpt.h"

namespace zerodp::hf {

// The files a PEFT adapter folder holds, each written whole or not at all.
inline constexpr const char* kAdapterFiles[] = {"adapter_model.safetensors", "adapter_config.json"};

// The JSON text of adapter_config.json, indented by two spaces. Requires config.lora_rank > 0.
std::string peft_adapter_config_json(const model::GptConfig& config,
                                     const std::string& base_model_name_or_path);
// Writes kAdapterFiles into the folder `dir` (which must exist), the adapters read through
// `read` over the LoRA layout (GptModel::units()). Throws Error on I/O failure.
void export_peft_adapter(const model::GptConfig& config, const ParamReader& read,
                         const std::string& base_model_name_or_path, const std::string& dir);

// A reader of the base's layout (gpt_base_units) whose adapted weights have the adapters merged
// into them: `base` reads the base's fp32 params, `adapters` holds the LoRA layout's whole.
ParamReader merged_reader(const model::GptConfig& config, ParamReader base,
                          std::vector<float> adapters);

}  // namespace zerodp::hf

// LoRA's adapters on a catalogued model, counted tensor by tensor as PEFT builds them: each
// targeted linear of in x out gains lora_A (rank x in) and lora_B (out x rank), without a bias
// (PEFT's default bias="none"); the adapters train and the linear is frozen. So a target adds
// rank·(in + out) parameters per linear it names, whatever the alpha, and Llama-2-7B with
// rank 8 on q_proj and v_proj trains 4,194,304 (PEFT's print_trainable_parameters()).
//
// Targets are matched as PEFT matches a target_modules list: a target names a linear when it
// is the linear's name or a suffix of it at a dot ("q_proj" names "self_attn.q_proj", "c_proj"
// both of gpt2's); the one target "all-linear" names every linear but the output layer. A
// target naming one layer or one expert by its index is refused: every layer's and every
// expert's linear of a name are adapted alike.
//
// Contract: pure. lora_count() throws UsageError, one line naming `flag`, for a rank of 0, an
// empty target, "all-linear" beside other targets, a target holding an index, or a target
// that names no linear of the model (the line lists the model's names). Counts saturate at
// UINT64_MAX rather than wrap.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zerodp/catalog/models.h"

namespace zerodp::catalog {

// One adapted linear name: its shape, how many the model holds, and their adapters.
struct LoraTarget {
  std::string_view name;  // catalog::linear_layers()' name
  std::uint64_t in = 0, out = 0, count = 0;
  std::uint64_t adapter_params = 0;  // rank·(in + out)·count
};

struct LoraCount {
  std::uint64_t adapter_params = 0;  // every lora_A and lora_B: what trains
  std::uint64_t adapted_params = 0;  // the weights of the linears they adapt (frozen)
  std::vector<LoraTarget> targets;   // in the order of linear_layers()
};

LoraCount lora_count(const ModelConfig& config, std::uint64_t rank,
                     std::span<const std::string> targets, std::string_view flag);

// The model's linears' names, comma-separated, for an error or a help line.
std::string linear_layer_names(const ModelConfig& config);

}  // namespace zerodp::catalog

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
#include <optional>
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

// A LoRA run as PEFT's adapter_config.json (LoraConfig.save_pretrained) states it: what it
// trains and what it keeps for backward. Read: "peft_type" ("LORA"), "r", "lora_alpha",
// "lora_dropout", "target_modules" (a list of names, or "all-linear"), "modules_to_save" (null
// or a list), "bias" ("none"). What would change the bytes and is not counted yet is refused,
// naming the field: a regular expression as "target_modules", "bias" other than "none",
// "use_dora", "lora_bias", "use_qalora", a non-empty "rank_pattern", "layers_to_transform",
// "exclude_modules", "target_parameters", "trainable_token_indices" or "layer_replication". Other
// fields (task_type, base_model_name_or_path, init_lora_weights, use_rslora, alpha_pattern,
// fan_in_fan_out, ...) do not change what a rank holds and are not read.
struct LoraSettings {
  std::uint64_t rank = 0;
  double alpha = 0;
  double dropout = 0;
  std::vector<std::string> targets;          // names, or the one "all-linear"
  std::vector<std::string> modules_to_save;  // trained whole, beside the adapters
};
// json_text: an adapter_config.json; source names it in errors ("--adapter-config F"). Throws
// UsageError, one line naming the source and the field.
LoraSettings parse_adapter_config(std::string_view json_text, const std::string& source);

// The parameters PEFT trains whole for modules_to_save: a trainable copy of each module named
// (ModulesToSaveWrapper keeps the original, frozen, beside it). Counted for the embeddings and
// the head, by the family's names ("embed_tokens", gpt2's "wte" and "wpe", gpt_neox's
// "embed_in"; "lm_head", gpt_neox's "embed_out"), whole-name or dotted-suffix matched; any other
// name throws UsageError naming `flag` and the names counted.
std::uint64_t saved_module_params(const ModelConfig& config, std::span<const std::string> modules,
                                  std::string_view flag);

// What a LoRA run keeps for backward. Every base parameter is frozen, so autograd saves only
// what the gradients of the adapters and of the activations need: a frozen 16-bit linear keeps
// no input (its weight's gradient is not needed; a 4-bit one does, see `quantized_base`), a norm
// keeps no normalized rows for its weight, the embedding no token ids, and a targeted linear's
// adapter keeps its input (one storage for the linears that share it, q, k and v, gate and up) or,
// with dropout, its mask (only where the input needs a gradient) and its own dropped copy, then
// lora_A's output (rank a token) and `* scaling`'s wrapped float64. The first layer's input needs
// no gradient (the embedding is frozen) unless `input_requires_grad`, as transformers' gradient
// checkpointing makes it with PEFT (enable_input_require_grads; checkpointing always implies it
// here): then it keeps only what its own adapters' gradients need, the rest of its attention and
// MLP as far as a trainable path reaches them. A mixture (transformers 4.x's loop over the experts
// hit) keeps its router's softmax and top-k where the logits need a gradient, each routed token's
// indices, copy and gated MLP where the experts' outputs need one, and an adapter on an expert's
// linear a scale each pass, every expert taken as hit. Counted for gpt2, gpt_neox, llama, mistral,
// qwen2, qwen3, phi3, olmo2, gemma2, gemma3_text, mixtral, qwen2_moe and qwen3_moe; DeepSeek
// and a config's own dropout throw UsageError naming `flag`.
// tests/plan/torch_reference_test.cc holds the counts to PyTorch's saved tensors, eager
// attention; flash and SDPA keep their whole core wherever one of q, k, v needs a gradient
// (read from their code, not checked).
struct LoraShape {
  std::uint64_t rank = 0;
  double dropout = 0;
  std::vector<std::string_view> adapted;  // LoraCount::targets' names
  bool input_requires_grad = false;
  // QLoRA: every linear but the head is bitsandbytes' Linear4bit, whose MatMul4Bit keeps its
  // input for backward wherever that input needs a gradient (`ctx.tensors = (A, B)`), though
  // only the weight is used there.
  bool quantized_base = false;
};
std::optional<SavedTensors> lora_saved_tensor_bytes(
    const ModelConfig& config, std::uint64_t seq_len, std::uint64_t micro_batch,
    Attention attention, const LoraShape& lora, std::string_view flag,
    const plan::TorchRuntime& runtime = plan::kCudaTorch2);
std::optional<ModelActivations> lora_activation_bytes(
    const ModelConfig& config, std::uint64_t seq_len, std::uint64_t micro_batch,
    plan::Checkpointing checkpointing, Attention attention, const LoraShape& lora,
    std::string_view flag, const plan::TorchRuntime& runtime = plan::kCudaTorch2);

// The FLOPs of one token of a LoRA run, in training_flops()'s terms (N the base's product
// parameters, A one layer's attention products): the forward is the base's, 2 N + L A, plus the
// adapters', 2 R (in + out) for each adapted linear a token passes through (a mixture's experts:
// experts_per_token of each layer's); the backward computes the frozen weights' input gradients
// alone, 2 N + 2 L A (no weight gradient: half a full fine-tune's 4 N), and the adapters' input
// and weight gradients, twice their forward. model = forward + backward, 4 N + 3 L A + 6 P a
// token for the P adapter parameters it passes through; hardware adds what checkpointing
// computes again: the forward with full (2 N + L A + 2 P), the attention with selective (L A).
// params and attention are N and A.
TrainingFlops lora_training_flops(const ModelConfig& config, std::uint64_t seq_len,
                                  plan::Checkpointing checkpointing, const LoraShape& lora);

// QLoRA's base: bitsandbytes' NF4 weights (Linear4bit), as transformers loads a model with
// BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4"): every linear but the
// output layer (transformers' get_keys_to_not_convert) is quantized, one tensor a weight (a
// mixture's experts one each, as transformers 4.x builds them); biases, embeddings, norms and
// the head keep their 16 bits. What bitsandbytes' quantize_4bit keeps for a weight of n
// elements, in blocks of `block` (64):
//   the codes       storage·floor((n + 1) / (2·storage)) bytes, two to a byte (ceil(n / 2)
//                   with the default uint8 storage; bnb_4bit_quant_storage="bfloat16", what
//                   FSDP flattens, is 2)
//   absmax          with double quantization (bnb_4bit_use_double_quant): one byte a block,
//                   quantized in blocks of 256 with the dynamic map, plus 4 bytes a block of
//                   those, the 256-entry map (1,024 bytes, a copy per weight) and the fp32
//                   offset (4); without, 4 bytes a block
//   the NF4 table   16 fp32 values (64 bytes), a copy per weight
// which is 4 + 8/64 + 32/(64·256) ≈ 4.127 bits a weight with double quantization (the QLoRA
// paper's figure) and 4.5 without, plus 1,092 and 64 bytes a tensor.
struct Nf4Options {
  bool double_quant = true;
  std::uint32_t storage_bytes = 1;  // bnb_4bit_quant_storage's width: 1 (uint8), 2, 4
  std::uint32_t block = 64;
};
std::uint64_t nf4_tensor_bytes(std::uint64_t elements, const Nf4Options& options);
// Of which the codes: the tensor ZeRO-3 and FSDP shard (the rest, its quantization state,
// stays whole on every rank).
std::uint64_t nf4_code_bytes(std::uint64_t elements, const Nf4Options& options);

struct QuantizedBase {
  std::uint64_t quantized_params = 0;   // the quantized weights' elements
  std::uint64_t quantized_tensors = 0;  // how many weights
  std::uint64_t quantized_bytes = 0;    // their nf4_tensor_bytes()
  std::uint64_t code_bytes = 0;         // of which their nf4_code_bytes()
  std::uint64_t kept_params = 0;        // every other parameter, in 16 bits
  // The largest quantized weight's elements: what one layer's 16-bit copy holds while it
  // computes (bitsandbytes dequantizes a weight for its forward and again for its backward).
  std::uint64_t largest_quantized = 0;
};
QuantizedBase nf4_base(const ModelConfig& config, const Nf4Options& options);

}  // namespace zerodp::catalog

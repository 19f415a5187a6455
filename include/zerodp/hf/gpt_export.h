// Export of a GptModel's weights as Hugging Face GPT-2: model.safetensors + config.json, and
// as a whole Hugging Face folder with its generation config and byte-level tokenizer.
//
// Names and layouts are those of GPT2LMHeadModel's state dict without the "transformer."
// prefix, as the Hub's gpt2 checkpoints store them (transformers adds the prefix when
// loading, and re-ties lm_head.weight to wte.weight, which is therefore not stored):
//   wte.weight [256, C]   wpe.weight [T, C]
//   h.{i}.ln_1.weight [C]  h.{i}.ln_1.bias [C]
//   h.{i}.attn.c_attn.weight [C, 3C]  h.{i}.attn.c_attn.bias [3C]
//   h.{i}.attn.c_proj.weight [C, C]   h.{i}.attn.c_proj.bias [C]
//   h.{i}.ln_2.weight [C]  h.{i}.ln_2.bias [C]
//   h.{i}.mlp.c_fc.weight [C, 4C]     h.{i}.mlp.c_fc.bias [4C]
//   h.{i}.mlp.c_proj.weight [4C, C]   h.{i}.mlp.c_proj.bias [C]
//   ln_f.weight [C]  ln_f.bias [C]
// all F32. GPT-2's Conv1D stores its weight [in, out] where GptModel stores [out, in], so the
// four matmul weights of each block are transposed on the way out; nothing else changes.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "zerodp/model/gpt.h"

namespace zerodp::hf {

// One exported tensor: its Hugging Face name and shape, where its elements start in
// GptModel's flat layout, and whether they are stored transposed there ([out, in]).
struct HfTensor {
  std::string name;
  std::vector<std::size_t> shape;
  std::size_t flat_offset = 0;
  bool transposed = false;
};

// The tensors in file order (the flat layout's order). Requires a valid config.
std::vector<HfTensor> gpt2_hf_tensors(const model::GptConfig& config);

// read(offset, out): fill out with the fp32 flat parameters [offset, offset + out.size()),
// e.g. from memory or from a checkpoint file, so the export holds one tensor at a time.
using ParamReader = std::function<void(std::size_t offset, std::span<float> out)>;

// Writes the safetensors file (metadata {"format": "pt"}). Throws Error on I/O failure.
void export_gpt2_safetensors(const model::GptConfig& config, const ParamReader& read,
                             const std::string& path);
// The same from consolidated params in memory (params.size() == config.param_count()).
void export_gpt2_safetensors(const model::GptConfig& config, std::span<const float> params,
                             const std::string& path);

// transformers' GPT2Config for the model: n_layer, n_head, n_embd, n_positions (= n_ctx),
// vocab_size, model_type "gpt2", architectures ["GPT2LMHeadModel"], layer_norm_epsilon 1e-5,
// activation_function "gelu_new", n_inner null (4 n_embd), tie_word_embeddings true, and
// dropouts 0 (zerodp trains without dropout), and bos/eos token ids null (GPT2Config's
// defaults, 50256, lie outside a 256-symbol vocabulary). The JSON text, indented by two spaces.
std::string gpt2_config_json(const model::GptConfig& config);
// Writes it, indented, to path (Error on failure).
void write_gpt2_config(const model::GptConfig& config, const std::string& path);
// "config.json" in the directory of a .safetensors path, where transformers looks for it.
std::string config_path_beside(const std::string& safetensors_path);

// generation_config.json: zerodp sample's defaults (sampling, temperature 0.8, top-k 40), at
// most the model's context in length, and no special tokens (a byte vocabulary has none).
std::string generation_config_json(const model::GptConfig& config);

// tokenizer.json in the format of Hugging Face's tokenizers library: a byte-level BPE whose
// vocabulary is the 256 bytes, each the id of its byte value (the symbol of byte b is GPT-2's
// printable stand-in for it, bytes_to_unicode()), with no merges, so any text encodes to its
// UTF-8 bytes and any ids decode to their bytes: exactly zerodp's tokens.
std::string byte_tokenizer_json();
// GPT-2's printable stand-in for each byte (GPT-2's bytes_to_unicode(), as UTF-8): bytes that
// are printable Latin-1 stand for themselves, the others for U+0100 onwards in byte order.
std::string byte_symbol(unsigned char byte);

// tokenizer_config.json: the tokenizer class transformers builds from tokenizer.json, and the
// longest input, the model's context.
std::string tokenizer_config_json(const model::GptConfig& config);

// The files a Hugging Face folder export holds, each written whole or not at all.
inline constexpr const char* kFolderFiles[] = {"model.safetensors", "config.json",
                                               "generation_config.json", "tokenizer.json",
                                               "tokenizer_config.json"};
// Writes kFolderFiles into the folder `dir`, which must exist. Throws Error on I/O failure.
void export_gpt2_folder(const model::GptConfig& config, const ParamReader& read,
                        const std::string& dir);

}  // namespace zerodp::hf

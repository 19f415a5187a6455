#include "zerodp/hf/gpt_export.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/hf/safetensors.h"

namespace zerodp::hf {

std::vector<HfTensor> gpt2_hf_tensors(const model::GptConfig& config) {
  std::vector<HfTensor> out;
  const auto units = model::gpt_units(config);
  for (std::size_t u = 0; u < units.size(); ++u) {
    const bool block = u >= 1 && u + 1 < units.size();
    for (const auto& t : units[u].tensors) {
      HfTensor h{t.name, t.shape, units[u].param_offset + t.offset, false};
      if (block && t.shape.size() == 2) {  // a Linear weight [out, in] -> Conv1D [in, out]
        h.shape = {t.shape[1], t.shape[0]};
        h.transposed = true;
      }
      out.push_back(std::move(h));
    }
  }
  return out;
}

void export_gpt2_safetensors(const model::GptConfig& config, const ParamReader& read,
                             const std::string& path) {
  const auto tensors = gpt2_hf_tensors(config);
  std::vector<TensorSpec> specs;
  std::size_t largest_transposed = 0;
  for (const auto& t : tensors) {
    specs.push_back({t.name, t.shape});
    if (t.transposed) largest_transposed = std::max(largest_transposed, specs.back().elements());
  }
  std::vector<float> stored(largest_transposed);  // a weight as GptModel stores it
  write_safetensors(path, specs,
                    [&](std::size_t i, std::span<float> out) {
                      const HfTensor& t = tensors[i];
                      if (!t.transposed) {
                        read(t.flat_offset, out);
                        return;
                      }
                      const std::size_t in = t.shape[0], outs = t.shape[1];  // HF [in, out]
                      const std::span<float> src(stored.data(), out.size());
                      read(t.flat_offset, src);  // [out, in]
                      for (std::size_t o = 0; o < outs; ++o) {
                        for (std::size_t c = 0; c < in; ++c) out[c * outs + o] = src[o * in + c];
                      }
                    },
                    {{"format", "pt"}});
}

void export_gpt2_safetensors(const model::GptConfig& config, std::span<const float> params,
                             const std::string& path) {
  ZERODP_CHECK(params.size() == config.param_count());
  export_gpt2_safetensors(
      config,
      [params](std::size_t offset, std::span<float> out) {
        std::memcpy(out.data(), params.data() + offset, out.size_bytes());
      },
      path);
}

std::string gpt2_config_json(const model::GptConfig& config) {
  const nlohmann::ordered_json json = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", config.vocab},
      {"n_positions", config.seq_len},
      {"n_ctx", config.seq_len},
      {"n_embd", config.hidden},
      {"n_layer", config.layers},
      {"n_head", config.heads},
      {"n_inner", nullptr},
      {"activation_function", "gelu_new"},
      {"layer_norm_epsilon", 1e-5},
      {"resid_pdrop", 0.0},
      {"embd_pdrop", 0.0},
      {"attn_pdrop", 0.0},
      {"initializer_range", 0.02},
      {"scale_attn_weights", true},
      {"tie_word_embeddings", true},
      {"torch_dtype", "float32"},
  };
  return json.dump(2);
}

void write_gpt2_config(const model::GptConfig& config, const std::string& path) {
  write_file_atomically(path, gpt2_config_json(config) + "\n");
}

std::string config_path_beside(const std::string& safetensors_path) {
  return (std::filesystem::path(safetensors_path).parent_path() / "config.json").string();
}

}  // namespace zerodp::hf

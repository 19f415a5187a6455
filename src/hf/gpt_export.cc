#include "zerodp/hf/gpt_export.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
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
      {"bos_token_id", nullptr},
      {"eos_token_id", nullptr},
      {"torch_dtype", "float32"},
  };
  return json.dump(2);
}

std::string generation_config_json(const model::GptConfig& config) {
  const nlohmann::ordered_json json = {
      {"do_sample", true},
      {"temperature", 0.8},
      {"top_k", 40},
      {"max_length", config.seq_len},
      {"bos_token_id", nullptr},
      {"eos_token_id", nullptr},
      {"pad_token_id", nullptr},
  };
  return json.dump(2);
}

std::string byte_symbol(unsigned char byte) {
  // GPT-2's bytes_to_unicode(): '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves; the
  // other 68 bytes, in increasing order, for U+0100, U+0101, ...
  auto printable = [](unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  unsigned code = byte;
  if (!printable(byte)) {
    code = 0x100;
    for (unsigned b = 0; b < byte; ++b) code += printable(b) ? 0 : 1;
  }
  std::string utf8;
  if (code < 0x80) {
    utf8 += char(code);
  } else {  // below U+0800: two bytes
    utf8 += char(0xC0 | (code >> 6));
    utf8 += char(0x80 | (code & 0x3F));
  }
  return utf8;
}

std::string byte_tokenizer_json() {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (unsigned b = 0; b < 256; ++b) vocab[byte_symbol(static_cast<unsigned char>(b))] = b;
  const nlohmann::ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}};
  const nlohmann::ordered_json json = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", nlohmann::ordered_json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level},
      {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"vocab", vocab},
        {"merges", nlohmann::ordered_json::array()}}},
  };
  return json.dump(2);
}

std::string tokenizer_config_json(const model::GptConfig& config) {
  const nlohmann::ordered_json json = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                                       {"model_max_length", config.seq_len},
                                       {"clean_up_tokenization_spaces", false}};
  return json.dump(2);
}

namespace {

// Fault injection for tests: dies by SIGKILL once the weights are written and nothing else,
// the worst moment for an export to be interrupted, when ZERODP_INJECT_KILL_AFTER_WEIGHTS is
// set.
void die_here_if_asked() {
  if (std::getenv("ZERODP_INJECT_KILL_AFTER_WEIGHTS") != nullptr) ::raise(SIGKILL);
}

}  // namespace

void export_gpt2_folder(const model::GptConfig& config, const ParamReader& read,
                        const std::string& dir) {
  const std::filesystem::path folder(dir);
  export_gpt2_safetensors(config, read, (folder / "model.safetensors").string());
  die_here_if_asked();
  write_gpt2_config(config, (folder / "config.json").string());
  write_file_atomically((folder / "generation_config.json").string(),
                        generation_config_json(config) + "\n");
  write_file_atomically((folder / "tokenizer.json").string(), byte_tokenizer_json() + "\n");
  write_file_atomically((folder / "tokenizer_config.json").string(),
                        tokenizer_config_json(config) + "\n");
}

void write_gpt2_config(const model::GptConfig& config, const std::string& path) {
  write_file_atomically(path, gpt2_config_json(config) + "\n");
}

std::string config_path_beside(const std::string& safetensors_path) {
  return (std::filesystem::path(safetensors_path).parent_path() / "config.json").string();
}

}  // namespace zerodp::hf

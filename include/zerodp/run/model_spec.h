// Which model a run builds: the byte-level GPT (the default) on a text file, or the synthetic
// MLP, from the choice as written (`zerodp train`, `eval`, `sample` and `export` take it from
// their flags, cli/engine/model_flags.h) or from a checkpoint's model config.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"
#include "zerodp/data/samples.h"
#include "zerodp/data/text_data.h"
#include "zerodp/model/gpt.h"
#include "zerodp/model/mlp.h"
#include "zerodp/model/model.h"

namespace zerodp::run {

// The choice as written, each field the text of its flag. Empty means "not given" (the
// defaults are in ModelSpec), so that a flag of the other model is refused rather than ignored.
struct ModelChoice {
  std::string model = "gpt";
  std::string params;                          // mlp [1M]
  std::string layers, heads, hidden, seq_len;  // gpt [4, 4, 256, 128]
  bool checkpoint_activations = false;
  std::string compute = "auto";  // gpt: auto, fp32 or bf16 (resolve_compute())
  std::string data;              // gpt: a file; empty for the default corpus
  std::string data_seed = "1234";
  // mlp: the exact width and depth, in place of params (a resumed checkpoint's, which a
  // parameter count would not always give back).
  std::optional<model::MlpConfig> mlp_shape;
  // gpt, LoRA: adapters of this rank trained beside a frozen base, the GPT of the checkpoint
  // `base` (a folder or a save dir, as --resume takes), whose shape the run keeps.
  std::string lora_rank, lora_alpha, lora_targets;  // [none, 8, c_attn: PEFT's]
  std::string base;
  // QLoRA: nf4, the base's block weights held in NF4 (EngineOptions::frozen_nf4) [16 bits];
  // double_quant on or off, its absmax double-quantized [on].
  std::string quantize, double_quant;
};

// --lora-targets as written: PEFT's module names for GPT-2 (c_attn; c_proj, both projections
// of that name; c_fc), the qualified attn.c_attn, attn.c_proj, mlp.c_fc and mlp.c_proj, or
// all-linear, comma-separated. Returns model::LoraTarget bits; InvalidArgument naming
// lora_targets otherwise.
unsigned parse_lora_targets(const std::string& text);
// The bits as the qualified names, in target order (what a checkpoint records).
nlohmann::json lora_targets_json(unsigned targets);

// The fields of config_json() and the input (a field of ModelChoice) that sets each, as
// messages name them. `shape`: the field shapes the weights (a resume cannot change it).
struct ConfigField {
  const char* key;
  const char* input;  // nullptr for what no input sets (the vocabulary: bytes)
  bool shape;
  // How a message names it: the input's reference (zerodp/common/error.h), or "vocabulary".
  std::string name() const { return input ? field_ref(input) : std::string("vocabulary"); }
};
inline constexpr ConfigField kConfigFields[] = {
    {"type", "model", true},
    {"n_layer", "layers", true},
    {"n_head", "heads", true},
    {"n_embd", "hidden", true},
    {"n_positions", "seq_len", true},
    {"checkpoint_activations", "checkpoint_activations", false},
    {"compute", "compute", false},
    {"data_seed", "data_seed", false},
    {"width", "params", true},
    {"depth", "params", true},
    {"vocab_size", nullptr, false},
    {"params", "params", false},
    {"lora_rank", "lora_rank", true},
    {"lora_alpha", "lora_alpha", true},
    {"lora_targets", "lora_targets", true},
    {"lora_base", "base", true},
    {"lora_base_manifest_sha256", "base", true},
    {"quantize", "quantize", true},
    {"double_quant", "double_quant", true},
};

// A parsed model choice: builds one model per rank; all ranks share one sample source.
class ModelSpec {
 public:
  // Throws InvalidArgument naming the input at fault, Error when the data cannot be read.
  explicit ModelSpec(const ModelChoice& choice);
  // From a checkpoint manifest's "model" object (see config_json()), in fp32 compute.
  // A data_override is a file to evaluate: all of it is the validation split.
  explicit ModelSpec(const nlohmann::json& config, const std::string& data_override = {});
  // The same without its data: the model alone, for what needs only the weights (sample,
  // export), so a checkpoint whose corpus has moved or gone is still sampled and exported.
  // data() and samples() are not to be called on it (is_gpt() only).
  static ModelSpec without_data(const nlohmann::json& config);

  bool is_gpt() const { return is_gpt_; }
  // The same model with at most `layers` transformer blocks (GPT) or layers (MLP), on the same
  // samples: every kind of unit it has keeps its shape, so what a unit's kernels reach on it
  // they reach on this one, in a fraction of the memory (measure's kernel rates). layers >= 1.
  // A LoRA model made shallower drops its base (base() null): its frozen params are the
  // model's initial ones, of the same shapes.
  ModelSpec shallower(int layers) const;
  // threads: the GPT's (GptModel::set_threads); the MLP computes on one.
  std::unique_ptr<model::Model> make(int threads = 1) const;
  // Where every micro-batch's samples come from: the text's windows or synthetic samples.
  const data::SampleSource& samples() const { return *samples_; }
  // The GPT's config and data (is_gpt() only).
  const model::GptConfig& gpt() const { return gpt_; }
  // LoRA: the frozen base's checkpoint (null without LoRA), read in full when a run starts.
  bool lora() const { return is_gpt_ && gpt_.lora_rank > 0; }
  const checkpoint::Checkpoint* base() const { return base_.get(); }
  // The base's parameters, frozen (0 without LoRA); param_count() is then the adapters'.
  std::uint64_t frozen_param_count() const { return lora() ? gpt_.param_count() : 0; }
  // QLoRA: the base's block weights in NF4, with double quantization or not (lora() only).
  bool nf4() const { return lora() && nf4_; }
  bool double_quant() const { return double_quant_; }
  const model::MlpConfig& mlp() const { return mlp_; }
  std::shared_ptr<const data::TextData> data() const { return data_; }
  std::uint64_t data_seed() const { return data_seed_; }
  std::uint64_t param_count() const;
  std::size_t tokens_per_sample() const { return samples_->tokens_per_sample(); }
  // Bytes of activations one model holds for a micro-batch; UINT64_MAX when beyond 64 bits.
  std::uint64_t activation_bytes(std::uint64_t micro_batch) const;
  // The input that sets the model's size, as a memory error names it (a field reference).
  std::string size_field() const { return is_gpt_ ? field_ref("hidden") : field_ref("params"); }
  std::string describe() const;
  nlohmann::json config_json() const;

  // --compute auto settled for a run in `precision`: auto is bf16 when the 16-bit format is
  // bf16 and the CPU multiplies bf16 in hardware with a kernel faster than fp32's, fp32
  // otherwise; fp32 and bf16 stay. Sets gpt().compute; returns the header's line, "compute:
  // fp32 (auto: ...)" with the reason auto chose. A spec from a checkpoint has it settled.
  std::string resolve_compute(DType precision);
  // The data's identity: the text file's path as given ("" for the default corpus), and its
  // bytes' fingerprint, "fnv1a64 fe680f168f8bdd96, 237320 bytes" ("synthetic" for the MLP).
  // Two runs read the same data when the fingerprints are equal, whatever the paths.
  const std::string& data_path() const { return data_path_; }
  const std::string& data_fingerprint() const { return data_fingerprint_; }

 private:
  struct ConfigOnly {};
  ModelSpec(const nlohmann::json& config, ConfigOnly);
  void load_data(const std::string& path, int validation_percent = 10,
                 const std::string& seq_len_name = "");
  // --lora-rank and its flags, the base opened and its shape taken (the flags' shape checked
  // against it); and a checkpoint's lora_* fields, its base opened and held to its manifest's
  // SHA-256.
  void choose_lora(const ModelChoice& choice);
  void read_lora(const nlohmann::json& config);
  std::shared_ptr<const checkpoint::Checkpoint> base_;
  std::string base_folder_, base_manifest_sha256_;  // as a checkpoint records them
  bool nf4_ = false, double_quant_ = true;
  bool is_gpt_ = true;
  model::GptConfig gpt_;
  model::MlpConfig mlp_;
  std::shared_ptr<const data::TextData> data_;
  std::shared_ptr<const data::SampleSource> samples_;
  std::string data_path_;
  std::string data_fingerprint_ = "synthetic";
  std::uint64_t data_seed_ = 1234;
  bool compute_auto_ = false;  // --compute auto, not yet resolved
};

}  // namespace zerodp::run

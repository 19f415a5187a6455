#include "zerodp/run/model_spec.h"

#include <unistd.h>
#include <cstdio>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/json_text.h"
#include "zerodp/common/sha256.h"
#include "zerodp/common/units.h"
#include "zerodp/predict/peak.h"
#include "zerodp/run/run_record.h"

namespace zerodp::run {

namespace {

// The inputs of one model given with the other: refused, not silently ignored.
void check_model_inputs(const ModelChoice& f, bool gpt) {
  auto refuse = [gpt](const char* field) {
    throw InvalidArgument(field, field_ref(field) + " applies to " + field_ref("model") + " " +
                                     (gpt ? "mlp" : "gpt") + "; this run trains " +
                                     field_ref("model") + " " + (gpt ? "gpt" : "mlp"));
  };
  if (gpt) {
    if (!f.params.empty()) refuse("params");
    return;
  }
  const std::pair<const char*, const std::string*> lora[] = {
      {"lora_rank", &f.lora_rank},       {"lora_alpha", &f.lora_alpha},
      {"lora_targets", &f.lora_targets}, {"base", &f.base},
      {"quantize", &f.quantize},         {"double_quant", &f.double_quant}};
  for (const auto& [field, value] : lora) {
    if (!value->empty()) refuse(field);
  }
  const std::pair<const char*, const std::string*> gpt_only[] = {{"layers", &f.layers},
                                                                 {"heads", &f.heads},
                                                                 {"hidden", &f.hidden},
                                                                 {"seq_len", &f.seq_len},
                                                                 {"data", &f.data}};
  for (const auto& [field, value] : gpt_only) {
    if (!value->empty()) refuse(field);
  }
  if (f.checkpoint_activations) refuse("checkpoint_activations");
  if (f.compute != "auto") refuse("compute");
}

model::Compute parse_compute(const std::string& text) {
  if (text == "fp32") return model::Compute::fp32;
  if (text == "bf16") return model::Compute::bf16;
  throw InvalidArgument::expected("compute", "auto, fp32 or bf16", text);
}

// A GPT size, or its default when not given, in the range GptConfig::validate() takes.
int gpt_size(const std::string& text, const char* field, int fallback, std::uint64_t max) {
  if (text.empty()) return fallback;
  return static_cast<int>(units::parse_whole_in(text, field_ref(field), 1, max));
}

// The SHA-256 of a checkpoint's manifest.json: its identity (the manifest holds every shard's
// SHA-256), what a LoRA checkpoint records of its base.
std::string manifest_sha256(const checkpoint::Checkpoint& ck) {
  std::string why;
  const std::string path = ck.folder() + "/manifest.json";
  const std::optional<std::string> bytes = read_bounded(path, std::uint64_t{1} << 30, why);
  if (!bytes) throw Error(printable(path, 200) + ": " + why);
  return sha256_hex(bytes->data(), bytes->size());
}

}  // namespace

unsigned parse_lora_targets(const std::string& text) {
  const std::string accepted =
      "module names such as c_attn,c_proj,c_fc (c_proj adapts both projections of that name), "
      "attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, or all-linear";
  unsigned bits = 0;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string name = text.substr(at, comma - at);
    unsigned bit = 0;
    if (name == "all-linear") {
      bit = model::kLoraAllTargets;
    } else if (name == "c_proj") {
      bit = model::kLoraAttnProj | model::kLoraFcProj;
    } else if (name == "c_attn") {
      bit = model::kLoraAttn;
    } else if (name == "c_fc") {
      bit = model::kLoraFc;
    } else {
      for (int i = 0; i < model::kLoraTargets; ++i) {
        if (name == model::lora_target_name(i)) bit = 1u << i;
      }
    }
    if (bit == 0) throw InvalidArgument::expected("lora_targets", accepted, text);
    bits |= bit;
    at = comma + 1;
  }
  return bits;
}

nlohmann::json lora_targets_json(unsigned targets) {
  nlohmann::json names = nlohmann::json::array();
  for (int i = 0; i < model::kLoraTargets; ++i) {
    if ((targets >> i) & 1u) names.push_back(model::lora_target_name(i));
  }
  return names;
}

void ModelSpec::choose_lora(const ModelChoice& f) {
  if (f.lora_rank.empty()) {
    for (const auto& [field, value] :
         {std::pair{"lora_alpha", &f.lora_alpha}, std::pair{"lora_targets", &f.lora_targets}}) {
      if (!value->empty()) {
        throw InvalidArgument(field, field_ref(field) + ": it sets LoRA's adapters; give " +
                                         field_ref("lora_rank") + " R too");
      }
    }
    if (!f.base.empty()) {
      throw InvalidArgument("base", field_ref("base") +
                                        ": it names the frozen base of a LoRA run; give " +
                                        field_ref("lora_rank") + " R too");
    }
    if (!f.quantize.empty()) {
      throw InvalidArgument("quantize", field_ref("quantize") +
                                            ": it quantizes the frozen base of a LoRA run "
                                            "(QLoRA); give " +
                                            field_ref("lora_rank") + " R and " + field_ref("base") +
                                            " too");
    }
  }
  if (!f.double_quant.empty() && f.quantize.empty()) {
    throw InvalidArgument("double_quant", field_ref("double_quant") + ": needs " +
                                              field_ref("quantize") +
                                              " nf4 (it is how NF4 keeps its absmax)");
  }
  if (!f.double_quant.empty() && f.double_quant != "on" && f.double_quant != "off") {
    throw InvalidArgument::expected("double_quant", "on or off", f.double_quant);
  }
  if (!f.quantize.empty() && f.quantize != "nf4") {
    throw InvalidArgument::expected("quantize", "nf4", f.quantize);
  }
  if (f.lora_rank.empty()) return;
  nf4_ = f.quantize == "nf4";
  double_quant_ = f.double_quant != "off";
  if (f.base.empty()) {
    throw InvalidArgument("base", field_ref("lora_rank") +
                                      ": LoRA trains adapters beside a trained model: give " +
                                      field_ref("base") +
                                      " CHECKPOINT, a checkpoint folder or --save-dir of zerodp "
                                      "train");
  }
  std::shared_ptr<const checkpoint::Checkpoint> base;
  try {
    base = std::make_shared<const checkpoint::Checkpoint>(checkpoint::Checkpoint::open(f.base));
  } catch (const Error& e) {  // a path given on the command line: the flag is at fault
    throw InvalidArgument("base", field_ref("base") + ": " + e.text());
  }
  const RunRecord record = read_run_record(*base);  // every field in its type and range
  const std::string where = field_ref("base") + " " + shown(base->folder(), 160);
  if (!record.model.gpt) throw InvalidArgument("base", where + ": holds an MLP, not a GPT");
  if (nlohmann::json::parse(base->manifest().model).contains("lora_rank")) {
    throw InvalidArgument("base", where +
                                      ": holds a LoRA run's adapters; a base is a GPT trained "
                                      "whole");
  }
  // The run keeps the base's shape: a shape flag must say the same or be left out.
  const std::pair<const char*, int> shape[] = {{"layers", record.model.layers},
                                               {"heads", record.model.heads},
                                               {"hidden", record.model.hidden},
                                               {"seq_len", record.model.seq_len}};
  const int asked[] = {gpt_.layers, gpt_.heads, gpt_.hidden, gpt_.seq_len};
  const std::string* typed[] = {&f.layers, &f.heads, &f.hidden, &f.seq_len};
  for (int i = 0; i < 4; ++i) {
    if (!typed[i]->empty() && asked[i] != shape[i].second) {
      throw InvalidArgument(shape[i].first, field_ref(shape[i].first) + " " + *typed[i] + ": " +
                                                where + " has " + std::to_string(shape[i].second) +
                                                "; a LoRA run keeps its base's shape (leave " +
                                                field_ref(shape[i].first) + " out)");
    }
  }
  gpt_.layers = record.model.layers;
  gpt_.heads = record.model.heads;
  gpt_.hidden = record.model.hidden;
  gpt_.seq_len = record.model.seq_len;
  gpt_.lora_rank = static_cast<int>(
      units::parse_whole_in(f.lora_rank, field_ref("lora_rank"), 1, std::uint64_t(gpt_.hidden)));
  if (!f.lora_alpha.empty()) {
    gpt_.lora_alpha = static_cast<float>(units::parse_real(f.lora_alpha, field_ref("lora_alpha"),
                                                           "a positive number such as 16",
                                                           units::Zero::rejected));
  }
  if (!f.lora_targets.empty()) gpt_.lora_targets = parse_lora_targets(f.lora_targets);
  if (base->params() != gpt_.param_count()) {
    throw Error(base->folder() + "/manifest.json: its model config makes " +
                std::to_string(gpt_.param_count()) + " parameters, its shards hold " +
                std::to_string(base->params()));
  }
  base_folder_ = std::filesystem::absolute(base->folder()).lexically_normal().string();
  base_manifest_sha256_ = manifest_sha256(*base);
  base_ = std::move(base);
}

void ModelSpec::read_lora(const nlohmann::json& c) {
  gpt_.lora_rank = c.at("lora_rank").get<int>();
  gpt_.lora_alpha = c.at("lora_alpha").get<float>();
  gpt_.lora_targets = 0;
  for (const auto& name : c.at("lora_targets")) {
    gpt_.lora_targets |= parse_lora_targets(name.get<std::string>());
  }
  nf4_ = c.contains("quantize");
  double_quant_ = c.value("double_quant", true);
  base_folder_ = c.at("lora_base").get<std::string>();
  base_manifest_sha256_ = c.at("lora_base_manifest_sha256").get<std::string>();
  const std::string& folder = base_folder_;
  std::shared_ptr<const checkpoint::Checkpoint> base;
  try {
    base = std::make_shared<const checkpoint::Checkpoint>(checkpoint::Checkpoint::open(folder));
  } catch (const Failure& e) {
    throw Error("the base checkpoint of these adapters, " + printable(folder, 160) + ": " +
                e.text());
  }
  if (manifest_sha256(*base) != base_manifest_sha256_) {
    throw Error("the base checkpoint " + printable(folder, 160) +
                " is no longer the one the adapters were trained beside: its manifest's SHA-256 "
                "differs from the one recorded");
  }
  if (base->params() != gpt_.param_count()) {
    throw Error(base->folder() + "/manifest.json: holds " + std::to_string(base->params()) +
                " parameters, the adapters' base has " + std::to_string(gpt_.param_count()));
  }
  base_ = std::move(base);
}

ModelSpec::ModelSpec(const ModelChoice& f) {
  if (f.model != "gpt" && f.model != "mlp") {
    throw InvalidArgument::expected("model", "gpt or mlp", f.model);
  }
  is_gpt_ = f.model == "gpt";
  check_model_inputs(f, is_gpt_);
  data_seed_ = units::parse_whole(f.data_seed, field_ref("data_seed"), units::Zero::allowed);
  if (!is_gpt_) {
    // The synthetic MLP is a test bed, not a model to plan a cluster with: up to 4096 layers of
    // 4096 x 4096, so that every command (a --dry-run included) answers at once.
    constexpr std::uint64_t kMaxMlpParams = std::uint64_t{4096} * (4096 * 4096 + 4096);
    if (f.mlp_shape) {
      ZERODP_CHECK_MSG(f.params.empty(), "ModelChoice: params and mlp_shape both given");
      mlp_ = *f.mlp_shape;
      samples_ = std::make_shared<data::SyntheticRegression>(mlp_.width, data_seed_);
      return;
    }
    const std::string text = f.params.empty() ? "1M" : f.params;
    const std::uint64_t wanted = units::parse_count(text, field_ref("params"));
    if (wanted > kMaxMlpParams) {
      throw InvalidArgument(field_ref("params") + ": the MLP has at most " +
                            units::format_count(kMaxMlpParams) +
                            " parameters (4096 layers of 4096 x 4096), got " + shown(text));
    }
    mlp_ = model::MlpConfig::for_params(wanted);
    samples_ = std::make_shared<data::SyntheticRegression>(mlp_.width, data_seed_);
    return;
  }
  gpt_.layers = gpt_size(f.layers, "layers", 4, 1024);
  gpt_.heads = gpt_size(f.heads, "heads", 4, 1 << 16);
  gpt_.hidden = gpt_size(f.hidden, "hidden", 256, 1 << 16);
  gpt_.seq_len =
      f.seq_len.empty()
          ? 128
          : static_cast<int>(units::parse_tokens(f.seq_len, field_ref("seq_len"), 1 << 16));
  gpt_.checkpoint_activations = f.checkpoint_activations;
  compute_auto_ = f.compute == "auto";
  if (!compute_auto_) gpt_.compute = parse_compute(f.compute);
  choose_lora(f);
  gpt_.validate();
  load_data(f.data);
}

ModelSpec::ModelSpec(const nlohmann::json& c, ConfigOnly) {
  is_gpt_ = c.at("type") == "gpt";
  data_seed_ = c.at("data_seed").get<std::uint64_t>();
  if (!is_gpt_) {
    mlp_.width = c.at("width").get<std::size_t>();
    mlp_.depth = c.at("depth").get<int>();
    samples_ = std::make_shared<data::SyntheticRegression>(mlp_.width, data_seed_);
    return;
  }
  gpt_.layers = c.at("n_layer").get<int>();
  gpt_.heads = c.at("n_head").get<int>();
  gpt_.hidden = c.at("n_embd").get<int>();
  gpt_.seq_len = c.at("n_positions").get<int>();
  gpt_.checkpoint_activations = c.value("checkpoint_activations", false);
  if (c.contains("lora_rank")) read_lora(c);
  // A checkpoint's model is evaluated, sampled and exported in fp32 compute, whatever its run
  // trained in (config "compute"): the most exact figure, and the one PyTorch computes from an
  // export. A resume takes the run's compute through its flags (zerodp train).
  gpt_.validate();
  data_path_ = c.value("data", std::string());
  data_fingerprint_ = "not read";
}

ModelSpec ModelSpec::without_data(const nlohmann::json& config) {
  return ModelSpec(config, ConfigOnly{});
}

ModelSpec::ModelSpec(const nlohmann::json& c, const std::string& data_override)
    : ModelSpec(c, ConfigOnly{}) {
  if (!is_gpt_) return;
  // Its window is the checkpoint's, not a flag of the command that reads it (eval).
  const std::string seq_len_name = "the checkpoint's n_positions";
  if (!data_override.empty()) {
    load_data(data_override, 100, seq_len_name);
    return;
  }
  load_data(c.value("data", std::string()), 10, seq_len_name);
}

void ModelSpec::load_data(const std::string& path, int validation_percent,
                          const std::string& seq_len_name) {
  data_path_ = path;
  const auto seq = static_cast<std::size_t>(gpt_.seq_len);
  if (path.empty()) {
    data_ = std::make_shared<const data::TextData>(
        data::TextData::default_corpus(seq, validation_percent));
  } else {
    if (const std::string why = unreadable_because(path); !why.empty()) {
      throw InvalidArgument(field_ref("data") +
                            ": expected a readable file of text or bytes, got " + shown(path, 160) +
                            " (" + why + ")");
    }
    // An evaluated file (100 %) is named as it is; a training file as "data file '...'".
    const std::string source =
        validation_percent == 100 ? printable(path, 160) : "data file " + shown(path, 160);
    data_ = std::make_shared<const data::TextData>(
        data::TextData::from_file(path, seq, validation_percent, source, seq_len_name));
  }
  samples_ = std::make_shared<data::TextWindows>(data_, data_seed_);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)data_->fingerprint());
  data_fingerprint_ =
      "fnv1a64 " + std::string(hex) + ", " + std::to_string(data_->size()) + " bytes";
}

std::uint64_t ModelSpec::activation_bytes(std::uint64_t micro_batch) const {
  if (!is_gpt_) {
    return predict::mlp_activation_bytes({mlp_.width, std::uint64_t(mlp_.depth)}, micro_batch);
  }
  return predict::gpt_activation_bytes({.layers = std::uint64_t(gpt_.layers),
                                        .heads = std::uint64_t(gpt_.heads),
                                        .hidden = std::uint64_t(gpt_.hidden),
                                        .seq_len = std::uint64_t(gpt_.seq_len),
                                        .vocab = std::uint64_t(gpt_.vocab),
                                        .checkpoint_activations = gpt_.checkpoint_activations,
                                        .bf16_compute = gpt_.compute == model::Compute::bf16,
                                        .lora_rank = std::uint64_t(gpt_.lora_rank),
                                        .lora_targets = gpt_.lora_targets},
                                       micro_batch);
}

std::unique_ptr<model::Model> ModelSpec::make(int threads) const {
  if (!is_gpt_) return std::make_unique<model::Mlp>(mlp_);
  auto gpt = std::make_unique<model::GptModel>(gpt_);
  if (threads > 1) gpt->set_threads(threads);
  return gpt;
}

ModelSpec ModelSpec::shallower(int layers) const {
  ZERODP_CHECK(layers >= 1);
  ModelSpec s = *this;
  // A LoRA base has the deeper layout: the shallower model keeps its own initial base.
  if (s.gpt_.layers > layers) s.base_ = nullptr;
  s.gpt_.layers = std::min(s.gpt_.layers, layers);
  s.mlp_.depth = std::min(s.mlp_.depth, layers);
  return s;
}

std::uint64_t ModelSpec::param_count() const {
  if (lora()) return gpt_.lora_param_count();
  return is_gpt_ ? gpt_.param_count() : mlp_.param_count();
}

std::string ModelSpec::describe() const {
  if (!is_gpt_) return model::Mlp(mlp_).describe();
  if (lora()) {
    return gpt_.describe() + "; " + units::format_count(param_count()) +
           " parameters trained beside a frozen base of " +
           units::format_count(frozen_param_count()) +
           (nf4() ? std::string(" in NF4") + (double_quant_ ? " with double quantization" : "")
                  : std::string());
  }
  return gpt_.describe() + "; " + units::format_count(param_count()) + " parameters";
}

std::string ModelSpec::resolve_compute(DType precision) {
  if (!is_gpt_) return {};
  const bool native = model::bf16_kernel() == model::GemmKernel::onednn;
  std::string why;
  if (compute_auto_) {
    compute_auto_ = false;
    gpt_.compute = model::Compute::fp32;
    if (precision != DType::bf16) {
      why = "auto: the 16-bit format is " + std::string(dtype_name(precision));
    } else if (!model::cpu_has_native_bf16()) {
      why = "auto: no AVX512-BF16 or AMX-BF16 on this CPU";
    } else if (!native) {
      // Emulated bf16 rounds the operands and sums with fp32 products: slower than fp32.
      why =
          "auto: zerodp was built without oneDNN, and emulated bf16 products run slower than "
          "fp32; --compute bf16 runs them";
    } else {
      gpt_.compute = model::Compute::bf16;
      why = "auto: the 16-bit format is bf16 and this CPU multiplies bf16";
    }
  }
  std::string line = "compute: " + std::string(model::compute_name(gpt_.compute));
  if (gpt_.compute == model::Compute::bf16) {
    line += native ? " products (bf16 inputs, fp32 sums), oneDNN's bf16 matmul"
                   : " products (bf16 inputs, fp32 sums), emulated";
  } else {
    line += " products";
  }
  if (!why.empty()) line += " (" + why + ")";
  return line;
}

nlohmann::json ModelSpec::config_json() const {
  if (!is_gpt_) {
    return {{"type", "mlp"},
            {"width", mlp_.width},
            {"depth", mlp_.depth},
            {"data_seed", data_seed_},
            {"params", param_count()}};
  }
  nlohmann::json config = {
      {"type", "gpt"},
      {"n_layer", gpt_.layers},
      {"n_head", gpt_.heads},
      {"n_embd", gpt_.hidden},
      {"n_positions", gpt_.seq_len},
      {"vocab_size", gpt_.vocab},
      {"checkpoint_activations", gpt_.checkpoint_activations},
      {"compute", std::string(model::compute_name(gpt_.compute))},
      {"data", utf8_text(data_path_)},  // a file name is bytes: JSON holds UTF-8
      {"data_seed", data_seed_},
      {"params", param_count()}};
  if (lora()) {
    config["lora_rank"] = gpt_.lora_rank;
    config["lora_alpha"] = gpt_.lora_alpha;
    config["lora_targets"] = lora_targets_json(gpt_.lora_targets);
    config["lora_base"] = utf8_text(base_folder_);  // a file name is bytes: JSON holds UTF-8
    config["lora_base_manifest_sha256"] = base_manifest_sha256_;
    config["frozen_params"] = frozen_param_count();
    if (nf4_) {
      config["quantize"] = "nf4";
      config["double_quant"] = double_quant_;
    }
  }
  return config;
}

}  // namespace zerodp::run

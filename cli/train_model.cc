#include "train_model.h"

#include <cstdio>
#include <filesystem>

#include "zerodp/error.h"
#include "zerodp/units.h"

namespace zerodp::cli {

void add_model_flags(CLI::App* app, ModelFlags& f) {
  app->add_option("--model", f.model, "gpt (byte-level GPT-2 on --data) or mlp (synthetic) [gpt]");
  app->add_option(
      "--data", f.data,
      "gpt: a text (or any bytes) file [the license texts in /usr/share/common-licenses]");
  app->add_option("--layers", f.layers, "gpt: transformer blocks [4]");
  app->add_option("--heads", f.heads, "gpt: attention heads [4]");
  app->add_option("--hidden", f.hidden, "gpt: channels [256]");
  app->add_option("--seq-len", f.seq_len, "gpt: context length [128]");
  app->add_flag("--checkpoint-activations", f.checkpoint_activations,
                "gpt: keep each block's input only and recompute the block in backward");
  app->add_option("--params", f.params, "mlp: size in parameters, e.g. 10M [1M]");
  app->add_option("--data-seed", f.data_seed, "which windows the sample stream draws [1234]");
}

ModelSpec::ModelSpec(const ModelFlags& f) {
  if (f.model != "gpt" && f.model != "mlp") {
    throw UsageError("--model: expected gpt or mlp, got '" + f.model + "'");
  }
  is_gpt_ = f.model == "gpt";
  data_seed_ = units::parse_whole(f.data_seed, "--data-seed", units::Zero::allowed);
  if (!is_gpt_) {
    mlp_ = model::MlpConfig::for_params(units::parse_count(f.params, "--params"));
    samples_ = std::make_shared<data::SyntheticRegression>(mlp_.width, data_seed_);
    return;
  }
  auto whole = [](const std::string& text, const char* flag) {
    const std::uint64_t v = units::parse_whole(text, flag);
    if (v > 1'000'000) throw UsageError(std::string(flag) + ": expected at most 1000000");
    return static_cast<int>(v);
  };
  gpt_.layers = whole(f.layers, "--layers");
  gpt_.heads = whole(f.heads, "--heads");
  gpt_.hidden = whole(f.hidden, "--hidden");
  gpt_.seq_len = whole(f.seq_len, "--seq-len");
  gpt_.checkpoint_activations = f.checkpoint_activations;
  gpt_.validate();
  load_data(f.data);
}

ModelSpec::ModelSpec(const nlohmann::json& c, const std::string& data_override) {
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
  gpt_.validate();
  load_data(data_override.empty() ? c.value("data", std::string()) : data_override);
}

void ModelSpec::load_data(const std::string& path) {
  data_path_ = path;
  std::error_code ec;
  if (!path.empty() && !std::filesystem::is_regular_file(path, ec)) {
    throw UsageError("--data: expected a readable file of text or bytes, got '" + path +
                     "' (no such file)");
  }
  const auto seq = static_cast<std::size_t>(gpt_.seq_len);
  data_ = std::make_shared<const data::TextData>(
      path.empty() ? data::TextData::default_corpus(seq) : data::TextData::from_file(path, seq));
  samples_ = std::make_shared<data::TextWindows>(data_, data_seed_);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)data::fnv1a64(data_->bytes()));
  data_fingerprint_ =
      "fnv1a64 " + std::string(hex) + ", " + std::to_string(data_->size()) + " bytes";
}

std::unique_ptr<model::Model> ModelSpec::make() const {
  if (!is_gpt_) return std::make_unique<model::Mlp>(mlp_);
  return std::make_unique<model::GptModel>(gpt_);
}

std::uint64_t ModelSpec::param_count() const {
  return is_gpt_ ? gpt_.param_count() : mlp_.param_count();
}

std::string ModelSpec::describe() const {
  if (!is_gpt_) return model::Mlp(mlp_).describe();
  return gpt_.describe() + "; " + units::format_count(param_count()) + " parameters";
}

nlohmann::json ModelSpec::config_json() const {
  if (!is_gpt_) {
    return {{"type", "mlp"},
            {"width", mlp_.width},
            {"depth", mlp_.depth},
            {"data_seed", data_seed_},
            {"params", param_count()}};
  }
  return {{"type", "gpt"},
          {"n_layer", gpt_.layers},
          {"n_head", gpt_.heads},
          {"n_embd", gpt_.hidden},
          {"n_positions", gpt_.seq_len},
          {"vocab_size", gpt_.vocab},
          {"checkpoint_activations", gpt_.checkpoint_activations},
          {"data", data_path_},
          {"data_seed", data_seed_},
          {"params", param_count()}};
}

}  // namespace zerodp::cli

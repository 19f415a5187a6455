#include "checkpoint_model.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "zerodp/error.h"

namespace zerodp::cli {

void add_checkpoint_flag(CLI::App* app, CheckpointFlags& flags) {
  app->add_option("--checkpoint", flags.checkpoint,
                  "a checkpoint folder, or a --save-dir (its newest checkpoint)");
}

LoadedModel load_gpt(const CheckpointFlags& flags, bool read_params) {
  if (flags.checkpoint.empty()) {
    throw UsageError("--checkpoint: expected a checkpoint folder or a --save-dir of zerodp train");
  }
  checkpoint::Checkpoint ck = checkpoint::Checkpoint::open(flags.checkpoint);
  const nlohmann::json model =
      nlohmann::json::parse(ck.manifest().model);  // open() checked: an object
  if (model.value("type", "") != "gpt") {
    throw UsageError("--checkpoint: " + ck.folder() + " holds a " + model.value("type", "?") +
                     ", not a GPT");
  }
  std::optional<ModelSpec> parsed;
  try {
    parsed.emplace(model, flags.data);
  } catch (const UsageError& e) {
    if (std::string_view(e.what()).rfind("--data", 0) == 0) {
      if (!flags.data.empty()) throw;
      throw UsageError("--data: the corpus this checkpoint was trained on, " +
                       quote(model.value("data", std::string())) +
                       ", is not readable here: give it with --data FILE");
    }
    throw Error(ck.folder() + "/manifest.json: model config: " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ck.folder() + "/manifest.json: model config malformed (" + e.what() + ")");
  }
  ModelSpec spec = std::move(*parsed);
  // The weights must be this model's: a hand-edited config must not read past them.
  if (spec.param_count() != ck.params()) {
    throw Error(ck.folder() + "/manifest.json: the model config has " +
                std::to_string(spec.param_count()) + " parameters, the shards hold " +
                std::to_string(ck.params()));
  }
  std::vector<float> params;
  if (read_params) {
    params.resize(ck.params());
    ck.read({0, ck.params()}, params.data(), nullptr, nullptr);
  }
  return {std::move(ck), std::move(spec), std::move(params)};
}

}  // namespace zerodp::cli

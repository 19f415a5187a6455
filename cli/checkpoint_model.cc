#include "checkpoint_model.h"

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
  io::Checkpoint ck = io::Checkpoint::open(flags.checkpoint);
  const nlohmann::json& model = ck.manifest().at("model");
  if (model.value("type", "") != "gpt") {
    throw UsageError("--checkpoint: " + ck.folder() + " holds a " + model.value("type", "?") +
                     ", not a GPT");
  }
  ModelSpec spec(model, flags.data);
  std::vector<float> params;
  if (read_params) {
    params.resize(ck.params());
    ck.read({0, ck.params()}, params.data(), nullptr, nullptr);
  }
  return {std::move(ck), std::move(spec), std::move(params)};
}

}  // namespace zerodp::cli

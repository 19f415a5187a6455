// A trained model read back from a checkpoint for eval, sample and export: the model config
// from its manifest and the consolidated fp32 weights.
#pragma once

#include <string>
#include <vector>

#include "train_model.h"
#include "zerodp/checkpoint.h"

namespace zerodp::cli {

struct CheckpointFlags {
  std::string checkpoint;
  std::string data;  // overrides the corpus recorded in the checkpoint
};
void add_checkpoint_flag(CLI::App* app, CheckpointFlags& flags);

struct LoadedModel {
  zerodp::checkpoint::Checkpoint checkpoint;  // qualified: the member is named like the namespace
  ModelSpec spec;
  std::vector<float> params;  // the whole fp32 master
};

// Throws UsageError when --checkpoint is missing or not a GPT's; Error when it cannot be read.
LoadedModel load_gpt(const CheckpointFlags& flags, bool read_params = true);

}  // namespace zerodp::cli

// A trained model read back from a checkpoint for eval, sample and export: the model config
// from its manifest and the consolidated fp32 weights.
#pragma once

#include <optional>
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

// Throws UsageError when --checkpoint is missing or not a GPT's; Error when it cannot be read or
// its model config is not one a GPT can have (each field named: a whole number in range,
// vocab_size 256, n_head dividing n_embd, params the count the config makes).
LoadedModel load_gpt(const CheckpointFlags& flags, bool read_params = true);

// Claims --save-dir for a run of train (checkpoint::SaveDir::claim), before any rank starts:
// nullopt without --save-dir, and in the MPI processes other than world rank 0, which write
// shards only. A rewind's checkpoints are set aside later, once every check has passed
// (RankRun's start in train.cc).
std::optional<checkpoint::SaveDir> claim_save_dir(const std::string& save_dir, bool mpi,
                                                  const checkpoint::Checkpoint* resumed);

}  // namespace zerodp::cli

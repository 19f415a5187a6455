// The flags that choose a model: `train`, `measure` and `eval`'s model flags (--model, --layers,
// --params, ...), and `eval`, `sample` and `export`'s --checkpoint.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "zerodp/run/model_spec.h"

namespace zerodp::cli {

// The help names choice.model as the default model.
void add_model_flags(CLI::App* app, run::ModelChoice& choice,
                     const std::string& default_mlp_params = "1M");

// train's LoRA flags: --lora-rank, --lora-alpha, --lora-targets and --base.
void add_lora_flags(CLI::App* app, run::ModelChoice& choice);

struct CheckpointFlags {
  std::string checkpoint;
  std::string data;  // eval's --data: overrides the corpus recorded in the checkpoint
};
void add_checkpoint_flag(CLI::App* app, CheckpointFlags& flags);

}  // namespace zerodp::cli

// A trained model read back from a checkpoint for eval, sample and export: the model config
// from its manifest and the consolidated fp32 weights; and the claim on a run's save folder.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/model/gpt.h"
#include "zerodp/run/model_spec.h"

namespace zerodp::run {

struct LoadedModel {
  zerodp::checkpoint::Checkpoint checkpoint;  // qualified: the member is named like the namespace
  ModelSpec spec;
  std::vector<float> params;  // the whole fp32 master
  // A LoRA checkpoint's base (its params are the adapters): the base checkpoint's whole fp32
  // master, read when params are. Empty otherwise.
  std::vector<float> frozen;
};

// What a command reads of a checkpoint besides its weights: eval reads a corpus (the one the
// checkpoint records, or a file given), sample and export the model alone, so that they work
// wherever the checkpoint is, whatever became of its corpus.
enum class CheckpointData { none, corpus };

// The GPT of `folder` (a checkpoint folder, or a save folder: its newest). With
// CheckpointData::corpus, on its recorded corpus or on `data` when given (a file to evaluate:
// all of it is the validation split); with none, no data is opened and `data` must be empty.
// Throws UsageError when `folder` is empty or not a GPT's, or when a field of its manifest's
// model config or run record is out of its type or range (run/run_record.h: n_head dividing
// n_embd, vocab_size 256 ...); Error when it cannot be read or its config makes another
// parameter count than its shards hold.
LoadedModel load_gpt(const std::string& folder, CheckpointData use, const std::string& data = "",
                     bool read_params = true);

// A QLoRA run's base as its layers compute with it: each linear weight of `frozen` (the
// frozen layout's fp32 values, whole) quantized to NF4 and dequantized (optim/nf4.h), in fp32.
// load_gpt() applies it to LoadedModel::frozen for a spec.nf4() checkpoint.
void dequantize_nf4_base(const model::GptConfig& config, bool double_quant,
                         std::span<float> frozen);

// Claims the save folder of a run of train (checkpoint::SaveDir::claim), before any rank
// starts: nullopt for an empty `save_dir`, and in the MPI processes other than world rank 0,
// which write shards only. A rewind's checkpoints are set aside later, once every check has
// passed (Training's start, training.h).
std::optional<checkpoint::SaveDir> claim_save_dir(const std::string& save_dir, bool mpi,
                                                  const checkpoint::Checkpoint* resumed);

}  // namespace zerodp::run

// What a checkpoint says of its run: the manifest's "model" config and "run" record, read by
// one schema into their types before any of it is used (a resume's settings, eval's, sample's
// and export's model).
//
// Contract:
//  - Every field is read into its type and range, the ranges those of the flags that set it
//    (a step count 1 to 99,999,999, a stage's precision bf16 or fp16, a thread count 1 to 256,
//    a path at most 4096 bytes ...). A field of another JSON type is never converted ("9" is not
//    9 steps, "yes" is not true), and nothing is clamped or wrapped.
//  - A field out of its type or range throws UsageError, one line: the manifest's path (cut
//    when long), the field ("run.steps", "model.n_head") and what it must be, the value shown
//    cut to a few dozen characters. A checkpoint edited by hand is input, so the command exits
//    with status 2.
//  - The run record's precision must be the manifest's: the 16-bit rounding of the weights and
//    the loss-scale state belong to it.
//  - Fields a run record lacks (checkpoints written before they were recorded) are empty
//    optionals; the model config's fields are required but for checkpoint_activations,
//    compute and data (older configs): absent, they read as false, fp32 and the default corpus.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/zeropp.h"

namespace zerodp::run {

// A path a record may hold: Linux's PATH_MAX.
inline constexpr std::size_t kMaxRecordedPath = 4096;

struct RecordedModel {
  bool gpt = true;  // "type": "gpt", or "mlp"
  // The GPT's shape (n_layer, n_head, n_embd, n_positions), as GptConfig takes them.
  int layers = 0, heads = 0, hidden = 0, seq_len = 0;
  bool checkpoint_activations = false;
  std::string compute = "fp32";  // fp32 or bf16: the products' compute of the run
  std::string data;              // the corpus file; empty: the default corpus
  // The MLP's shape.
  std::size_t width = 0;
  int depth = 0;
  std::uint64_t data_seed = 0;
  // A LoRA run's "lora": its adapters and the base's checkpoint folder. lora_rank 0: none.
  int lora_rank = 0;
  double lora_alpha = 0;
  std::string lora_targets;  // the recorded names, comma-separated (as --lora-targets takes)
  std::string base;
  // A QLoRA run's base: "nf4" (empty: 16 bits), and "on" or "off" (empty without nf4).
  std::string quantize, double_quant;
};

struct RecordedRun {
  std::optional<std::int64_t> steps, warmup, eval_every;
  std::optional<std::uint64_t> eval_batches, micro_batch, seed;
  std::optional<int> grad_accum, threads;
  std::optional<double> lr, clip;  // as recorded: the fp32 value, widened
  std::optional<DType> precision;
  std::optional<ZeroPlusPlus> zeropp;
  std::optional<int> ranks_per_host;  // 0: the backend's
  std::optional<std::size_t> qwz_block;
  std::optional<std::string> data, data_fingerprint;
  std::optional<std::string> out;  // the folder of the loss curve; "" for none
};

struct RunRecord {
  std::string manifest;  // the manifest's path, for messages
  RecordedModel model;
  RecordedRun run;
  // The objects as recorded, checked: resume_rules.h compares them field by field.
  nlohmann::json model_json, run_json;
};

// The record of an opened checkpoint (Checkpoint::open checked the rest of its manifest).
// Throws UsageError as the contract says.
RunRecord read_run_record(const checkpoint::Checkpoint& checkpoint);

}  // namespace zerodp::run

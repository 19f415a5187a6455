// A run of the engine as written: each setting the text its input gave (a flag of `zerodp
// train`, `measure` or `eval`), parsed and checked here into the typed settings the run uses;
// and the rule of a resume for the settings not given.
//
// Contract:
//  - Messages name inputs by their fields (field_ref(), zerodp/common/error.h): "steps",
//    "micro_batch", "zeropp"; a front end names them its way (the command line: --steps).
//    A bad value is one line naming the field and the accepted form (UsageError).
//  - The ranges are the constants below, the same for a value typed and for one a checkpoint
//    recorded (run/run_record.h), so a resume cannot take a value a flag could not give.
//  - take_from_record() is the whole of what a resume takes from its checkpoint: every
//    setting not given takes the recorded one (the model's shape, the data and its seed, the
//    precision, the batch's split, the schedule and validation, ZeRO++, the stage, the ranks
//    and threads, the bucket size, the curve's folder, and the save dir when the resume names
//    a save dir). What a given setting may change is resume_rules.h's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/run/launch.h"
#include "zerodp/run/model_spec.h"
#include "zerodp/run/run_record.h"
#include "zerodp/run/training.h"
#include "zerodp/zero/engine.h"

namespace zerodp::run {

// Step counts: checkpoint folders are named step-%08d and found in name order, so a step has
// at most 8 digits (and 99,999,999 steps is years of training).
inline constexpr std::uint64_t kMaxSteps = 99'999'999;
inline constexpr std::uint64_t kMaxEvalBatches = 1'000'000;
inline constexpr std::uint64_t kMaxGradAccum = 1'000'000;
inline constexpr std::uint64_t kMaxKeep = 1'000'000;
// --timeout: at least a millisecond (the unit collectives wait in), at most a week.
inline constexpr double kMinTimeoutSeconds = 1e-3;
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;
// The model's sizes (GptConfig and MlpConfig take them).
inline constexpr std::uint64_t kMaxGptLayers = 1024;
inline constexpr std::uint64_t kMaxGptWidth = 1 << 16;  // heads, channels, context
inline constexpr std::uint64_t kMaxMlpWidth = 4096;
inline constexpr std::uint64_t kMaxMlpDepth = 4096;

// The engine's settings every engine command shares: ranks, backend, stage, precision,
// buckets, ZeRO++. Empty ranks: 4 on threads, the MPI world size on mpi; empty micro_batch:
// the command's default; empty ranks_per_host: the backend's hosts; empty rank_memory: none.
struct EngineChoice {
  std::string stage = "3";
  std::string ranks;
  std::string backend = "threads";
  std::string precision = "bf16";
  std::string bucket_bytes = "8MiB";
  std::string grad_accum = "1";
  std::string micro_batch;
  std::string clip = "1.0";
  std::string optimizer = "adamw";  // a name optimizer_from_name() reads, of a row the engine runs
  std::string seed = "1";
  std::string timeout = "300s";
  std::string rank_memory;
  std::string zeropp = "none";
  std::string qwz_block;  // empty: kDefaultQuantBlock (given, it needs qwz or qgz)
  std::string ranks_per_host;
  std::string threads = "auto";
  bool no_prefetch = false;
  bool no_overlap = false;
};

// The engine's options (UsageError naming the field at fault).
zero::EngineOptions engine_options(const EngineChoice& choice, std::size_t default_micro_batch);

// How the ranks are launched; agree holds the engine's settings as written, for the ranks of
// an MPI job to compare.
Launch launch_options(const EngineChoice& choice);

struct TrainChoice {
  ModelChoice model;
  EngineChoice engine;
  std::string steps = "200";
  std::string lr;          // empty: the optimizer's default (optim::Rule::default_lr)
  std::string warmup;      // empty: a tenth of the steps, at most 50
  std::string eval_every;  // empty: a tenth of the steps
  std::string eval_batches = "4";
  std::string log_every = "10";
  std::string out = "out";
  std::string save_dir, save_every, keep = "2", resume;
  bool threads_from_checkpoint = false;  // threads not given, taken from the checkpoint
};

// The run's settings, parsed and checked once, before any rank starts.
TrainSettings train_settings(const TrainChoice& choice);

// Whether the input of a field was given (the command line: its flag was typed).
using GivenField = std::function<bool(std::string_view field)>;

// A resume's choice: every setting `given` says was not given takes what `record` (of the
// checkpoint `checkpoint`, the one choice.resume names) holds; see the contract above.
void take_from_record(const RunRecord& record, const checkpoint::Checkpoint& checkpoint,
                      const GivenField& given, TrainChoice& choice);

}  // namespace zerodp::run

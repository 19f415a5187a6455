// What a resume may change (docs/checkpoints.md, "What a resume may change"): a resumed run is
// the same run, so the settings its checkpoint records are held to. Each changed setting is
// either refused with the reason, or allowed and said in one line.
//
// Both sides are run records (TrainSettings::run_record, training.h), JSON objects with the
// fields "micro_batch", "grad_accum", "steps", "lr", "warmup", "clip", "seed", "precision",
// "data", "data_fingerprint", "data_seed", "eval_every", "eval_batches". A field the
// checkpoint's record lacks (an older checkpoint) is not compared, and said so.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace zerodp::run {

// The settings a resume may not change whatever the ranks: the model's shape, the data's bytes,
// the data seed, the precision. Throws InvalidArgument naming, for every one that differs, the
// input (a field_ref(), zerodp/common/error.h), the checkpoint's value and this run's, all in
// one line ("...; and ...").
// `folder` names the checkpoint in messages; `saved_model` is its model config, `model` this
// run's.
void refuse_resume_changes(const std::string& folder, const nlohmann::json& saved_run,
                           const nlohmann::json& saved_model, const nlohmann::json& model,
                           const nlohmann::json& run);

// How the resumed run splits the checkpoint's global batch over `ranks`, and what it says.
struct ResumePlan {
  std::size_t micro_batch = 0;
  int grad_accum = 0;
  std::vector<std::string> notes;  // one line each, for rank 0 to print
};

// Keeps the global batch (saved ranks x micro-batch x grad-accum): the micro-batch asked for
// when it divides the per-rank share, else the largest one below it that does, and the
// accumulation that makes up the rest. Throws UsageError listing the rank counts that can
// split it when `ranks` cannot. Notes every other recorded setting this run changes.
ResumePlan plan_resume(const std::string& folder, const nlohmann::json& saved_run, int saved_ranks,
                       const nlohmann::json& run, int ranks);

}  // namespace zerodp::run

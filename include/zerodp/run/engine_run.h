// The planner's view of a run zerodp is about to start: the model's shape and the engine's
// options as predict::EngineRun (zerodp/predict/peak.h), its predicted peak as JSON, and the advice
// a refused budget ends with. What `train --dry-run` prints, what `measure` and `train` show beside
// the ledger.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>
#include "zerodp/common/error.h"

#include "zerodp/plan/memory.h"
#include "zerodp/predict/peak.h"
#include "zerodp/run/launch.h"
#include "zerodp/run/model_spec.h"
#include "zerodp/zero/engine.h"

namespace zerodp::run {

// The run as the planner sees it: the model's shape, the engine options and N ranks on the
// launch's backend. hpZ's hosts are options.ranks_per_host when given, else the backend's
// (`backend_ranks_per_host`, Communicator::ranks_per_host()); before any rank exists (a dry
// run) the threads backend's one host, or under mpirun the ranks mpirun put on this node.
predict::EngineRun engine_run(const ModelSpec& spec, const zero::EngineOptions& options,
                              const Launch& launch, int ranks, int backend_ranks_per_host = 0);

// The planner's bytes per parameter for the engine's model state: 16-bit params and grads, and
// K of the optimizer's row (its fp32 master and fp32 slots: 12 with AdamW, 8 with Lion or SGD
// with momentum, 4 with SGD). What train, measure and the memory check predict with, read from
// the same table the planner reads.
plan::BytesPerParam engine_bytes_per_param(const zero::EngineOptions& options);

// The model state rank `rank` of planned.ranks holds, predicted: the seed's formula with
// engine_bytes_per_param() for fp32 slots; with 8-bit block-wise slots, whose bytes depend on
// the tensors (small ones keep fp32 states) and the blocks the rank holds part of, the count of
// the engine's own layout (predict::predict_rank_peak).
std::uint64_t engine_model_state_bytes(const predict::EngineRun& planned,
                                       const zero::EngineOptions& options, std::uint64_t params,
                                       int rank);

// --zeropp's value for these options: "none", or its words in the order qwz, hpz, qgz.
std::string zeropp_value(const zero::EngineOptions& options);
// " with qwZ (int8 gathers, blocks of 256) and hpZ (hosts of 2 ranks)", or "" without ZeRO++:
// for the run's header and its dry run.
std::string zeropp_description(const predict::EngineRun& run);

// What fits in `budget` bytes per rank, one clause, e.g. "at N = 4 the cheapest stage that
// fits is ZeRO-2; ZeRO-3 needs N = 5" or "no stage fits at N = 4; least N: ZeRO-3 6, ZeRO-2 9,
// ZeRO-1 none up to 1024, ZeRO-0 none up to 1024". What to change is named by field_ref()
// (zerodp/common/error.h): name_fields() gives it the front end's words.
std::string fit_advice(const predict::EngineRun& run, std::uint64_t budget, int max_ranks);

// {"predicted_peak_bytes", "moment", "per_rank": [{"rank", "peak_bytes", "categories"}...],
//  "breakdown": {category: bytes of rank 0}, "budget": {...} when budget > 0}. per_rank holds
// every rank up to 1024 ranks; beyond, rank 0 (the largest) and the last. The budget's
// "advice" names inputs by `name`.
nlohmann::json peak_json(const predict::EngineRun& run, std::uint64_t budget, int max_ranks,
                         const FieldNamer& name);

// The ranks whose figures are shown: all up to 1024, else the first (largest) and the last.
std::vector<int> shown_ranks(int ranks);

// "ZeRO-0" ... "ZeRO-3", as the advice names stages.
std::string stage_label(Stage stage);

}  // namespace zerodp::run

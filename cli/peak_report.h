// The planner's peak (zerodp/plan_peak.h) for the run a command is about to start: what
// `train --dry-run` prints, what `measure` shows beside the ledger, and the advice a refused
// budget ends with.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine_flags.h"
#include "train_model.h"
#include "zerodp/engine.h"
#include "zerodp/plan_peak.h"

namespace zerodp::cli {

// The run as the planner sees it: the model's shape, the engine options and N ranks on the
// launch's backend.
plan::EngineRun engine_run(const ModelSpec& spec, const EngineOptions& options,
                           const Launch& launch, int ranks);

// The ranks a run will have, before any communicator exists: --ranks, or under mpirun the
// world size. Throws UsageError naming --ranks when neither says (--backend mpi outside
// mpirun).
int planned_ranks(const Launch& launch);

// The most ranks a search for the least N looks at on this backend.
int max_ranks_searched(const Launch& launch);

// What fits in `budget` bytes per rank, one clause, e.g. "at N = 4 the cheapest stage that
// fits is ZeRO-2; ZeRO-3 needs N = 5" or "no stage fits at N = 4; least N: ZeRO-3 6, ZeRO-2 9,
// ZeRO-1 none up to 1024, ZeRO-0 none up to 1024".
std::string fit_advice(const plan::EngineRun& run, std::uint64_t budget, int max_ranks);

// {"predicted_peak_bytes", "moment", "per_rank": [{"rank", "peak_bytes", "categories"}...],
//  "breakdown": {category: bytes of rank 0}, "budget": {...} when budget > 0}. per_rank holds
// every rank up to 1024 ranks; beyond, rank 0 (the largest) and the last.
nlohmann::json peak_json(const plan::EngineRun& run, std::uint64_t budget, int max_ranks);

// The table for people: rank 0's categories (and the ranks whose peak differs), the moment,
// and the verdict for the budget.
void print_peak(const std::string& model, const plan::EngineRun& run, std::uint64_t budget,
                int max_ranks);

}  // namespace zerodp::cli

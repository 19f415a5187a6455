// The planner's peak (zerodp/run/engine_run.h) for the run a command is about to start, as a
// table for people: what `train --dry-run` prints.
#pragma once

#include <cstdint>
#include <string>

#include "zerodp/run/engine_run.h"

namespace zerodp::cli {

// Rank 0's categories (and the ranks whose peak differs), the moment, and the verdict for the
// budget.
void print_peak(const std::string& model, const predict::EngineRun& run, std::uint64_t budget,
                int max_ranks);

}  // namespace zerodp::cli

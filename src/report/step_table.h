// The predicted step in the plan for people: the lines that say what its compute is made of
// and which links it crosses, and its table, one row per stage (plan_table() prints them).
// Internal to the report part.
#pragma once

#include <cstddef>
#include <string>

#include "zerodp/report/report.h"

namespace zerodp::report {

// What the predicted step is made of: its compute and where it comes from, and the links.
// Requires a predicted step's inputs (compute, topology).
std::string step_header(const PlanInputs& in);

// The predicted step of each stage: compute, communication, what is exposed, the step, and
// what it makes of the GPUs; with --tokens the run's wall clock and GPU-hours (and cost); then
// each stage's collectives. Cut into parts wider than `width` (0: no limit).
std::string step_table(const PlanReport& report, std::size_t width);

}  // namespace zerodp::report

// What `zerodp measure` measured, printed for people: a table beside the planner's prediction
// (the JSON contract for tools is run::measure_json).
#pragma once

#include <vector>

#include "zerodp/run/measurement.h"

namespace zerodp::cli {

void print_measure_table(const run::MeasureSetup& setup,
                         const std::vector<run::StageMeasure>& stages, bool per_rank);

}  // namespace zerodp::cli

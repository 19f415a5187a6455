// What `zerodp measure` measured, for people: a table of each stage's measured figures beside
// the planner's predictions, and per rank on request (the contract for tools is
// measure_json(), measurement.h).
//
// Contract: pure; every figure comes from the StageMeasure it is given, the words
// "predicted" and "measured"/"counted" say which is which. Inputs the text names are named by
// `name` (zerodp/common/error.h).
#pragma once

#include <string>
#include <vector>

#include "zerodp/common/error.h"
#include "zerodp/run/measurement.h"

namespace zerodp::run {

std::string measurement_table(const MeasureSetup& setup, const std::vector<StageMeasure>& stages,
                              bool per_rank, const FieldNamer& name = field_name);

}  // namespace zerodp::run

// The plan beside DeepSpeed's own estimate (deepspeed/estimator.h) for the same model and
// GPUs: `zerodp plan --estimator deepspeed`.
//
// Contract: pure; DeepSpeed's figures are its own (quirks included), each difference from the
// plan's is named in a line.
#pragma once

#include <cstdint>
#include <string>
#include "zerodp/common/error.h"
#include "zerodp/report/report.h"

namespace zerodp::report {

// What DeepSpeed's estimators are asked for.
struct DeepSpeedEstimate {
  std::uint64_t params = 0, largest_layer = 0;
  int gpus_per_node = 1, nodes = 1;
};

// DeepSpeed's text, the plan's model state for ZeRO-2 and ZeRO-3 beside it (the report's
// GPUs, without offload) and a line on each difference; follows plan_table().
std::string deepspeed_comparison(const DeepSpeedEstimate& estimate, const PlanReport& report,
                                 const FieldNamer& name = field_name);

// plan_json() (json.h) with one more key, "deepspeed": DeepSpeed's rows for the same model and
// GPUs.
std::string plan_json(const PlanReport& report, const DeepSpeedEstimate& estimate,
                      const FieldNamer& name = field_name);

}  // namespace zerodp::report

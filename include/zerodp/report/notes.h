// The plan's conclusions in plain language, for the lines under the table.
//
// Contract: pure; one sentence each, units as in the table (plan_table(), table.h).
#pragma once

#include <string>
#include <vector>
#include "zerodp/common/error.h"
#include "zerodp/report/report.h"

namespace zerodp::report {

// The verdicts of cells B, D, E, H and the comm ratio of F, one sentence each, in the order a
// reader needs them. Decimal units (GB, TB) unless `binary` (GiB, TiB). Inputs a note advises
// (a stage, an offload) are named by `name` (zerodp/common/error.h).
std::vector<std::string> plan_notes(const PlanReport& report, bool binary = false,
                                    const FieldNamer& name = field_name);

// " with the 5 % margin" where the plan's verdicts have a band (a predicted peak), else "": the
// words every sentence that names a count or a stage that fits adds.
std::string margin_words(const PlanReport& report);

// "--offload-optimizer nvme --offload-params none": the flags of `offload` as field references
// (error.h), the params' named where they differ from the plan's inputs.
std::string offload_words(const PlanReport& report, const deepspeed::Offload& offload);

}  // namespace zerodp::report

// The plan for people: one aligned table.
//
// Contract: pure; only the columns the inputs determine are shown.
#pragma once

#include <string>
#include "zerodp/common/error.h"
#include "zerodp/report/report.h"

namespace zerodp::report {

// One aligned table with a header naming the inputs and a footer naming the conventions,
// followed by the notes (notes.h). Decimal units (GB, TB) unless `binary` (GiB, TiB). Inputs
// the text names are named by `name`.
std::string plan_table(const PlanReport& report, bool binary = false,
                       const FieldNamer& name = field_name);

}  // namespace zerodp::report

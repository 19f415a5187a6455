// The plan for people: one aligned table.
//
// Contract: pure; only the columns the inputs determine are shown.
#pragma once

#include <cstddef>
#include <string>
#include "zerodp/common/error.h"
#include "zerodp/report/report.h"

namespace zerodp::report {

// The width `zerodp plan` prints at unless asked for its whole width (--wide).
inline constexpr std::size_t kPlanColumns = 100;

// One aligned table with a header naming the inputs and a footer naming the conventions,
// followed by the notes (notes.h). Decimal units (GB, TB) unless `binary` (GiB, TiB). Inputs
// the text names are named by `name`. No line is wider than `width` columns (0: no limit): a
// table wider is printed in parts, each with the stage column and whole columns after it, and
// a longer line of text is wrapped, its continuation indented by two (common/text_wrap.h).
// A stage's verdict at N as the "fits" column words it: "yes", "tight", "no", or "no (host)"
// where the host cannot hold its offload. Requires the verdict (a GPU memory and N).
std::string fits_word(const StageReport& stage);

std::string plan_table(const PlanReport& report, bool binary = false,
                       const FieldNamer& name = field_name, std::size_t width = 0);

}  // namespace zerodp::report

// The frame the plan's tables share (table.cc, step_table.cc): a column is a header and what
// each stage shows under it, and render() lays the columns out, one row per stage. Internal to
// the report part.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "zerodp/report/report.h"

namespace zerodp::report {

struct Column {
  std::string header;
  std::function<std::string(const StageReport&)> cell;
};

// The table of `columns`, one row per stage. Wider than `width` (0: no limit), it is cut into
// parts one after the other, each a few whole columns after the first (the stage's), so that
// every row of a part is read across as before.
std::string render(const std::vector<Column>& columns, const PlanReport& report, std::size_t width);

}  // namespace zerodp::report

#include "table_render.h"

#include <algorithm>
#include <utility>

namespace zerodp::report {

std::string render(const std::vector<Column>& columns, const PlanReport& report,
                   std::size_t width) {
  std::vector<std::vector<std::string>> rows(1);
  for (const Column& c : columns) rows[0].push_back(c.header);
  for (const StageReport& s : report.stages) {
    rows.emplace_back();
    for (const Column& c : columns) rows.back().push_back(c.cell(s));
  }
  std::vector<std::size_t> col_width(columns.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      col_width[i] = std::max(col_width[i], row[i].size());
    }
  }
  // The parts: [first, last) column ranges after column 0, each as many as fit.
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  for (std::size_t i = 1; i < columns.size() || parts.empty();) {
    std::size_t used = col_width[0], j = i;
    while (j < columns.size() && (j == i || width == 0 || used + 2 + col_width[j] <= width)) {
      used += 2 + col_width[j++];
    }
    parts.emplace_back(i, j);
    i = j;
  }
  std::string out;
  for (const auto& [first, last] : parts) {
    if (!out.empty()) out += "\n";
    for (const auto& row : rows) {
      std::string line = row[0] + std::string(col_width[0] - row[0].size(), ' ');  // stage left
      for (std::size_t i = first; i < last; ++i) {
        line += "  " + std::string(col_width[i] - row[i].size(), ' ') + row[i];  // numbers right
      }
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace zerodp::report

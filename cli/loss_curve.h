// The loss curve of a run: train and validation loss against step, as CSV (for tools) and as
// an SVG line chart (for people).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zerodp::cli {

struct LossCurve {
  std::vector<std::pair<std::int64_t, double>> train, validation;
  std::string title;

  // Throw zerodp::Error naming the path when it cannot be written.
  void write_csv(const std::string& path) const;
  void write_svg(const std::string& path) const;
};

}  // namespace zerodp::cli

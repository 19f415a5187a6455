// The loss curve of a run: train and validation loss against step, as CSV (for tools) and as
// an SVG line chart (for people). A resumed run continues the history it finds in its CSV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zerodp::run {

// The curve's folder before any step: made, and its loss.csv and loss.svg replaceable (nothing
// or a regular file there), so that a run never trains to the end to find it cannot write its
// curve. Empty: no curve. Throws UsageError naming the field "out".
void check_curve_folder(const std::string& out);

struct LossCurve {
  std::vector<std::pair<std::int64_t, double>> train, validation;
  std::string title;

  // A resumed run's history: the rows of the CSV at `path` (as write_csv writes it) before
  // `first_step`, the step the run resumes at. Later rows belong to the run that went on past
  // the checkpoint, and are superseded. No file: no history. Throws zerodp::Error naming the
  // path and line when the file is not such a CSV (it is not ours to replace).
  void load_csv_before(const std::string& path, std::int64_t first_step);
  // Throw zerodp::Error naming the path when it cannot be written.
  void write_csv(const std::string& path) const;
  void write_svg(const std::string& path) const;
};

}  // namespace zerodp::run

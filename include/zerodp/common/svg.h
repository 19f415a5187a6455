// A minimal SVG writer for the planner's figure: just the elements a line chart needs. Text is
// escaped; coordinates are printed with two decimals, enough for screen pixels.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zerodp::svg {

struct Stroke {
  std::string color = "#000";
  double width = 1;
  std::string dash;  // SVG stroke-dasharray, e.g. "6 4"; empty for a solid line
};

enum class Anchor { start, middle, end };

// An axis's tick step: 1, 2, 2.5 or 5 times a power of ten giving about `ticks` intervals over
// `range` (> 0).
double nice_step(double range, int ticks);
// A tick label: `value` printed with a printf spec of one double, such as "%.0f" or "%.3g".
std::string tick_label(double value, const char* spec);

class Document {
 public:
  Document(double width, double height);

  void rect(double x, double y, double w, double h, std::string_view fill, const Stroke* stroke);
  void line(double x1, double y1, double x2, double y2, const Stroke& stroke);
  void circle(double cx, double cy, double r, std::string_view fill, const Stroke& stroke);
  void polyline(const std::vector<std::pair<double, double>>& points, const Stroke& stroke);
  // rotate: degrees about (x, y), e.g. -90 for a vertical axis title. halo: a white outline
  // under the glyphs, so a label stays legible where a curve crosses it.
  void text(double x, double y, std::string_view content, double size, Anchor anchor,
            std::string_view fill = "#222", bool bold = false, double rotate = 0,
            bool halo = false);

  // The document, closed.
  std::string str() const;

 private:
  std::string body_;
  double width_, height_;
};

}  // namespace zerodp::svg

// The seed's figure: M_DP, M_1, M_2, M_3 against N with the floors dashed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "zerodp/common/error.h"
#include "zerodp/common/svg.h"
#include "zerodp/common/units.h"
#include "zerodp/plan/figure.h"

namespace zerodp::plan {
namespace {

// Geometry, in SVG pixels: the plot area and, right of it, the legend.
constexpr double kWidth = 960, kHeight = 600;
constexpr double kLeft = 90, kRight = 700, kTop = 80, kBottom = 510;
constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"};

// "1 GB = 10⁹ bytes": the convention of the axis, spelled out as the seed does.
std::string unit_meaning(const units::ByteUnit& unit) {
  const int exponent = static_cast<int>(std::lround(std::log10(unit.bytes)));
  const bool binary = unit.name.find('i') != std::string_view::npos;
  const int exponent2 = static_cast<int>(std::lround(std::log2(unit.bytes)));
  static const char* kSuperscript[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  auto power = [](int base, int e) {
    std::string digits;
    for (char c : std::to_string(e)) digits += kSuperscript[c - '0'];
    return std::to_string(base) + digits;
  };
  return "1 " + std::string(unit.name) + " = " +
         (unit.bytes == 1 ? std::string("1")
          : binary        ? power(2, exponent2)
                          : power(10, exponent)) +
         " bytes";
}

// The N at which the curves are sampled: every integer up to 4096, then about 2000 points
// spread evenly along the axis (always including max).
std::vector<int> sample_points(int max_gpus, bool log_x) {
  std::set<int> n;
  if (max_gpus <= 4096) {
    for (int i = 1; i <= max_gpus; ++i) n.insert(i);
  } else {
    constexpr int kSamples = 2000;
    for (int i = 0; i <= kSamples; ++i) {
      const double t = static_cast<double>(i) / kSamples;
      const double v = log_x ? std::pow(double(max_gpus), t) : 1 + t * (max_gpus - 1);
      n.insert(std::clamp(static_cast<int>(std::lround(v)), 1, max_gpus));
    }
  }
  return {n.begin(), n.end()};
}

struct Axes {
  int max_gpus;
  bool log_x;
  double y_max;  // in display units
  double x(double n) const {
    const double t =
        log_x ? std::log2(n) / std::log2(double(max_gpus)) : (n - 1) / double(max_gpus - 1);
    return kLeft + t * (kRight - kLeft);
  }
  double y(double v) const { return kBottom - v / y_max * (kBottom - kTop); }
};

std::vector<int> x_ticks(const Axes& axes) {
  std::vector<int> ticks;
  if (axes.log_x) {
    for (long long n = 1; n <= axes.max_gpus; n *= 2) ticks.push_back(static_cast<int>(n));
    // Label the right end too, unless it would crowd the last power of two.
    if (axes.x(axes.max_gpus) - axes.x(ticks.back()) > 40) ticks.push_back(axes.max_gpus);
  } else {
    ticks.push_back(1);
    const double step = std::max(1.0, svg::nice_step(axes.max_gpus - 1, 8));
    for (double n = step; n <= axes.max_gpus + 1e-9; n += step) {
      if (axes.x(n) - axes.x(ticks.back()) > 24) ticks.push_back(static_cast<int>(std::lround(n)));
    }
  }
  return ticks;
}

void draw_axes(svg::Document& doc, const Axes& axes, double y_step, const units::ByteUnit& unit) {
  const svg::Stroke grid{"#e3e3e3", 1, ""}, axis{"#333", 1.2, ""};
  const char* spec = y_step == std::floor(y_step) ? "%.0f" : "%g";
  for (double v = 0; v <= axes.y_max + 1e-9 * axes.y_max; v += y_step) {
    const double y = axes.y(v);
    doc.line(kLeft, y, kRight, y, grid);
    doc.line(kLeft - 5, y, kLeft, y, axis);
    doc.text(kLeft - 9, y + 4, svg::tick_label(v, spec), 12, svg::Anchor::end);
  }
  for (int n : x_ticks(axes)) {
    const double x = axes.x(n);
    doc.line(x, kTop, x, kBottom, grid);
    doc.line(x, kBottom, x, kBottom + 5, axis);
    doc.text(x, kBottom + 20, std::to_string(n), 12, svg::Anchor::middle);
  }
  doc.line(kLeft, kBottom, kRight, kBottom, axis);
  doc.line(kLeft, kTop, kLeft, kBottom, axis);
  doc.text((kLeft + kRight) / 2, kBottom + 48,
           std::string("number of GPUs N (") + (axes.log_x ? "log" : "linear") + " scale)", 14,
           svg::Anchor::middle);
  doc.text(30, (kTop + kBottom) / 2, "model-state memory per GPU (" + std::string(unit.name) + ")",
           14, svg::Anchor::middle, "#222", false, -90);
}

// Bytes in the unit of the y axis.
double in_unit(std::uint64_t bytes, const units::ByteUnit& unit) {
  return static_cast<double>(bytes) / unit.bytes;
}

void draw_title(svg::Document& doc, const FigureOptions& o, const units::ByteUnit& unit) {
  doc.text(kWidth / 2, 30, "Model-state memory per GPU vs number of GPUs: DP and ZeRO-1/2/3", 18,
           svg::Anchor::middle, "#111", true);
  const BytesPerParam& b = o.bpp;
  doc.text(kWidth / 2, 54,
           "Φ = " + units::format_count(o.params) + " params, bytes/param " +
               bytes_per_param_words(b) + " (" + o.bpp_source + "); activations not included; " +
               unit_meaning(unit),
           12.5, svg::Anchor::middle, "#444");
}

// The dashed floors of ZeRO-1/2/3 (DP is its own floor). Returns their labels, to be drawn
// over the curves: {y, text}.
std::vector<std::pair<double, std::string>> draw_floors(svg::Document& doc, const Axes& axes,
                                                        const FigureOptions& o,
                                                        const units::ByteUnit& unit) {
  std::vector<std::pair<double, std::string>> labels;
  for (Stage stage : {Stage::zero1, Stage::zero2, Stage::zero3}) {
    const int i = stage_number(stage);
    const double floor = in_unit(floor_bytes(o.params, stage, o.bpp), unit);
    const double y = axes.y(floor);
    doc.line(kLeft, y, kRight, y, svg::Stroke{kColors[i], 1.6, "7 5"});
    labels.emplace_back(y - 6, std::string(stage_name(stage)) + " floor " +
                                   svg::tick_label(floor, "%.3g") + " " + std::string(unit.name));
  }
  return labels;
}

void draw_curves(svg::Document& doc, const Axes& axes, const FigureOptions& o,
                 const units::ByteUnit& unit) {
  const std::vector<int> ns = sample_points(o.max_gpus, o.log_x);
  const std::vector<int> marks = x_ticks(axes);
  auto y_at = [&](int n, Stage stage) {
    return axes.y(in_unit(model_state_bytes(o.params, n, stage, o.bpp), unit));
  };
  for (Stage stage : kStages) {
    const svg::Stroke line{kColors[stage_number(stage)], 2.5, ""};
    std::vector<std::pair<double, double>> points;
    for (int n : ns) points.emplace_back(axes.x(n), y_at(n, stage));
    doc.polyline(points, line);
    // Dots where the N axis has ticks: the curves are only defined at whole N.
    for (int n : marks) doc.circle(axes.x(n), y_at(n, stage), 3.2, "#fff", line);
  }
}

// At the left end, where every curve is still far above its floor, nudged apart when floors
// are close.
void draw_floor_labels(svg::Document& doc, std::vector<std::pair<double, std::string>> labels) {
  std::sort(labels.begin(), labels.end());
  for (std::size_t i = 1; i < labels.size(); ++i) {
    labels[i].first = std::max(labels[i].first, labels[i - 1].first + 15);
  }
  for (const auto& [y, label] : labels) {
    doc.text(kLeft + 8, std::min(y, kBottom - 6.0), label, 12, svg::Anchor::start, "#333", false, 0,
             true);
  }
}

// Right of the plot: each stage's colour and formula, and the floors' dash.
void draw_legend(svg::Document& doc, const BytesPerParam& bpp) {
  const double lx = kRight + 22;
  const svg::Stroke frame{"#bbb", 1, ""};
  doc.rect(lx - 10, kTop, 245, 150, "#fff", &frame);
  doc.text(lx, kTop + 22, "model state per GPU", 13, svg::Anchor::start, "#111", true);
  for (Stage stage : kStages) {
    const int i = stage_number(stage);
    const double y = kTop + 46 + 22 * i;
    doc.line(lx, y - 4, lx + 30, y - 4, svg::Stroke{kColors[i], 2.5, ""});
    doc.text(lx + 38, y,
             std::string(stage_name(stage)) + ": " +
                 (i == 0 ? std::string("M_DP") : "M_" + std::to_string(i)) + " = " +
                 stage_formula(stage, bpp),
             12.5, svg::Anchor::start);
  }
  doc.line(lx, kTop + 128, lx + 30, kTop + 128, svg::Stroke{"#555", 1.6, "7 5"});
  doc.text(lx + 38, kTop + 132, "floor as N → ∞", 12.5, svg::Anchor::start);
  doc.text(lx - 10, kTop + 172, "DP is flat: it is its own floor.", 11.5, svg::Anchor::start,
           "#555");
}

}  // namespace

std::string memory_figure_svg(const FigureOptions& o) {
  ZERODP_CHECK(o.max_gpus >= 2 && o.max_gpus <= kMaxFigureGpus);
  const std::uint64_t dp = model_state_bytes(o.params, 1, Stage::dp, o.bpp);  // the top curve
  const units::ByteUnit unit = units::byte_unit_for(dp, o.binary);
  const double y_step = svg::nice_step(in_unit(dp, unit) * 1.05, 6);
  const Axes axes{o.max_gpus, o.log_x, std::ceil(in_unit(dp, unit) * 1.05 / y_step) * y_step};

  svg::Document doc(kWidth, kHeight);
  draw_title(doc, o, unit);
  draw_axes(doc, axes, y_step, unit);
  // Floors first so the curves are drawn over them; their labels last, over the curves that
  // cross them.
  auto labels = draw_floors(doc, axes, o, unit);
  draw_curves(doc, axes, o, unit);
  draw_floor_labels(doc, std::move(labels));
  draw_legend(doc, o.bpp);
  return doc.str();
}

}  // namespace zerodp::plan

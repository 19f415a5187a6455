#include "zerodp/plan/figure.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace zerodp::plan {
namespace {

using Points = std::vector<std::pair<double, double>>;

// The points of every <polyline>, in order. Found with find(), not std::regex: libstdc++'s
// regex recurses once per character matched, and a 2000-point curve overflows the stack of
// an ASan build (docs/hardening.md).
std::vector<Points> polylines(const std::string& svg) {
  std::vector<Points> out;
  for (auto at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    const auto end = svg.find('>', at);
    const auto begin = svg.find(" points=\"", at);
    if (begin == std::string::npos || begin > end) continue;
    const auto first = begin + 9, last = svg.find('"', first);
    Points points;
    std::istringstream in(svg.substr(first, last - first));
    double x, y;
    char comma;
    while (in >> x >> comma >> y) points.emplace_back(x, y);
    out.push_back(points);
  }
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Figure, IsAStandaloneSvgWithTitleAxesLegendAndFloors) {
  FigureOptions o;
  o.params = 1'000'000'000;
  const std::string svg = memory_figure_svg(o);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_NE(svg.find("Model-state memory per GPU vs number of GPUs"), std::string::npos);
  EXPECT_NE(svg.find("number of GPUs N (log scale)"), std::string::npos);
  EXPECT_NE(svg.find("model-state memory per GPU (GB)"), std::string::npos);
  for (const char* legend : {"DP: M_DP = 16Φ", "ZeRO-1: M_1 = 4Φ + 12Φ/N",
                             "ZeRO-2: M_2 = 2Φ + 14Φ/N", "ZeRO-3: M_3 = 16Φ/N", "floor as N → ∞",
                             "ZeRO-1 floor 4 GB", "ZeRO-2 floor 2 GB", "ZeRO-3 floor 0 GB"}) {
    EXPECT_NE(svg.find(legend), std::string::npos) << legend;
  }
  EXPECT_EQ(count(svg, "stroke-dasharray"), 4u);  // three floors and the legend's sample
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
  // Log-2 ticks 1 … 64.
  for (const char* tick : {">1<", ">2<", ">4<", ">8<", ">16<", ">32<", ">64<"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
}

TEST(Figure, CurvesStartTogetherFallWithNAndStayOrdered) {
  for (bool log_x : {true, false}) {
    FigureOptions o;
    o.params = 175'000'000'000;
    o.max_gpus = 100;
    o.log_x = log_x;
    const auto curves = polylines(memory_figure_svg(o));
    ASSERT_EQ(curves.size(), 4u);
    for (const Points& c : curves) {
      ASSERT_EQ(c.size(), 100u);                // every N from 1 to 100
      EXPECT_EQ(c.front(), curves[0].front());  // at N = 1 all stages hold 16Φ
      for (std::size_t i = 1; i < c.size(); ++i) {
        EXPECT_GT(c[i].first, c[i - 1].first);    // N grows to the right
        EXPECT_GE(c[i].second, c[i - 1].second);  // memory never grows (y points down)
      }
    }
    for (std::size_t i = 0; i < 100; ++i) {  // DP above ZeRO-1 above ZeRO-2 above ZeRO-3
      for (int s = 1; s < 4; ++s) EXPECT_GE(curves[s][i].second, curves[s - 1][i].second);
    }
  }
}

TEST(Figure, LargeRangesAreSampled) {
  FigureOptions o;
  o.params = 1'000'000'000;
  o.max_gpus = kMaxFigureGpus;
  const auto curves = polylines(memory_figure_svg(o));
  ASSERT_EQ(curves.size(), 4u);
  EXPECT_LT(curves[0].size(), 2100u);
  EXPECT_GT(curves[0].size(), 500u);
}

}  // namespace
}  // namespace zerodp::plan

#include "zerodp/common/svg.h"

#include <cmath>
#include <cstdio>

namespace zerodp::svg {
namespace {

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string stroke_attributes(const Stroke& s) {
  std::string a = " stroke=\"" + s.color + "\" stroke-width=\"" + num(s.width) + "\"";
  if (!s.dash.empty()) a += " stroke-dasharray=\"" + s.dash + "\"";
  return a;
}

}  // namespace

double nice_step(double range, int ticks) {
  const double raw = range / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / magnitude;
  return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 2.5 ? 2.5 : r <= 5 ? 5 : 10) * magnitude;
}

std::string tick_label(double value, const char* spec) {
  char text[64];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

Document::Document(double width, double height) : width_(width), height_(height) {}

void Document::rect(double x, double y, double w, double h, std::string_view fill,
                    const Stroke* stroke) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" +
           num(h) + "\" fill=\"" + std::string(fill) + "\"" +
           (stroke ? stroke_attributes(*stroke) : std::string()) + "/>\n";
}

void Document::line(double x1, double y1, double x2, double y2, const Stroke& stroke) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
           num(y2) + "\"" + stroke_attributes(stroke) + "/>\n";
}

void Document::circle(double cx, double cy, double r, std::string_view fill, const Stroke& stroke) {
  body_ += "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) + "\" fill=\"" +
           std::string(fill) + "\"" + stroke_attributes(stroke) + "/>\n";
}

void Document::polyline(const std::vector<std::pair<double, double>>& points,
                        const Stroke& stroke) {
  body_ += "<polyline fill=\"none\" stroke-linejoin=\"round\"" + stroke_attributes(stroke) +
           " points=\"";
  for (std::size_t i = 0; i < points.size(); ++i) {
    // Appended in steps: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
    if (i) body_ += ' ';
    body_ += num(points[i].first);
    body_ += ',';
    body_ += num(points[i].second);
  }
  body_ += "\"/>\n";
}

void Document::text(double x, double y, std::string_view content, double size, Anchor anchor,
                    std::string_view fill, bool bold, double rotate, bool halo) {
  const char* anchors[] = {"start", "middle", "end"};
  body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size) +
           "\" text-anchor=\"" + anchors[static_cast<int>(anchor)] + "\" fill=\"" +
           std::string(fill) + "\"" + (bold ? " font-weight=\"bold\"" : "");
  if (halo) body_ += " stroke=\"#fff\" stroke-width=\"4\" paint-order=\"stroke\"";
  if (rotate != 0) {
    body_ += " transform=\"rotate(" + num(rotate) + " " + num(x) + " " + num(y) + ")\"";
  }
  body_ += '>';
  body_ += escaped(content);
  body_ += "</text>\n";
}

std::string Document::str() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" +
         num(width_) + "\" height=\"" + num(height_) + "\" viewBox=\"0 0 " + num(width_) + " " +
         num(height_) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
         "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n" +
         body_ + "</svg>\n";
}

}  // namespace zerodp::svg
